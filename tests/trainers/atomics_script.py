"""A training script in nanoGPT's style whose gradients are summed in a run-dependent order, as a GPU's atomics sum
them (tests/trainers/_atomics.py), written with no thought of resumeproof: `resumeproof verify --observe` verifies it.

    resumeproof verify --observe --output runs/atomics-script --atol 0 --steps 6 --interrupt-at 3 \\
      --faults model,optimizer,scheduler,scaler \\
      --train-cmd  "python -B tests/trainers/atomics_script.py --ordered --iters {steps} --out {run}" \\
      --resume-cmd "python -B tests/trainers/atomics_script.py --ordered --iters {steps} --out {run} \\
                    --resume {checkpoint}" \\
      --checkpoint "{run}/ckpt_{step}.pt"

Float32: an 8 -> 32 -> 1 net with dropout (torch's global generator), batches from a per-epoch permutation that a
NumPy Generator of its own draws, AdamW, a warm-up then cosine LambdaLR stepped per update, an enabled CPU GradScaler
whose scale grows into fp16's overflows (that update skipped, the scale halved), an EMA of the weights
(AveragedModel). It writes `{out}/ckpt_{iter}.pt` after every update: model, optimizer, scheduler, scaler, ema,
iter, the epoch's permutation and cursor, both generators. A resume restores all of it, the generators last.

Flags: `--iters N` (the run's length; the schedule's too), `--out DIR`, `--resume CKPT`, and
- `--ordered`: sum the gradients in the examples' order: the script is then exactly deterministic;
- `--bug PART` (optimizer, scheduler, scaler, ema, rng, data): the resume silently loses PART: the optimizer's
  state not loaded, the schedule built again after the optimizer's load (back to its warm-up), the GradScaler
  left fresh, the EMA started again from the restored weights, the generators not restored, the epoch started
  again from its first batch.
"""

import argparse
import math
import os

import _atomics
import numpy as np
import torch
from torch import nn
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn

p = argparse.ArgumentParser(description="Train a toy regression; checkpoint after every iteration.")
p.add_argument("--iters", type=int, default=10, help="iterations in all, and the schedule's length")
p.add_argument("--out", required=True, help="where ckpt_{iter}.pt goes")
p.add_argument("--resume", default=None, help="a ckpt_*.pt to resume from")
p.add_argument("--ordered", action="store_true", help="sum the gradients in a fixed order: exactly deterministic")
p.add_argument("--bug", choices=_atomics.BUGS, help="lose this part on the resume")
args = p.parse_args()

torch.set_num_threads(1)
torch.manual_seed(1337)
os.makedirs(args.out, exist_ok=True)
batch_size, warmup, learning_rate = 8, 3, 3e-3

# a toy "corpus": predict the sum of a window of 8 numbers
data = torch.randn(32, 8, generator=torch.Generator().manual_seed(0))
targets = data.sum(dim=1, keepdim=True)
shuffle = np.random.default_rng(1337)  # the data order's own generator
perm, cursor = shuffle.permutation(len(data)), 0


def get_batch() -> tuple[torch.Tensor, torch.Tensor]:
    global perm, cursor
    if cursor == len(perm):  # a new epoch
        perm, cursor = shuffle.permutation(len(data)), 0
    ix = torch.from_numpy(perm[cursor : cursor + batch_size])
    cursor += batch_size
    return data[ix], targets[ix]


def lr_lambda(it: int) -> float:  # warm-up, then cosine decay to a tenth, as nanoGPT's
    if it < warmup:
        return (it + 1) / warmup
    return 0.1 + 0.45 * (1 + math.cos(math.pi * (it - warmup) / max(1, args.iters - warmup)))


def ema_of(model: nn.Module) -> AveragedModel:
    return AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.9))


model = nn.Sequential(
    _atomics.Linear(8, 32, ordered=args.ordered),
    nn.GELU(),
    nn.Dropout(0.1),
    _atomics.Linear(32, 1, ordered=args.ordered),
)
optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate, weight_decay=0.1)
scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda)
scaler = torch.amp.GradScaler("cpu", init_scale=2.0**13, growth_interval=2)  # grows into overflows from update 5
ema = ema_of(model)

iter_num = 0
if args.resume:
    checkpoint = torch.load(args.resume, map_location="cpu", weights_only=True)
    model.load_state_dict(checkpoint["model"])
    if args.bug != "optimizer":
        optimizer.load_state_dict(checkpoint["optimizer"])
    if args.bug == "scheduler":
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda)  # the bug: back to the warm-up
    else:
        scheduler.load_state_dict(checkpoint["scheduler"])
    if args.bug != "scaler":
        scaler.load_state_dict(checkpoint["scaler"])
    if args.bug == "ema":
        ema = ema_of(model)  # the bug: a fresh average of the restored weights
    else:
        ema.load_state_dict(checkpoint["ema"])
    if args.bug != "data":
        perm, cursor = checkpoint["perm"].numpy(), checkpoint["cursor"]
    iter_num = checkpoint["iter"]
    if args.bug != "rng":  # last: nothing may draw between the restore and the first iteration
        torch.set_rng_state(checkpoint["rng"]["torch"])
        shuffle.bit_generator.state = checkpoint["rng"]["numpy"]

model.train()
while iter_num < args.iters:
    x, y = get_batch()
    loss = nn.functional.mse_loss(model(x), y)
    optimizer.zero_grad(set_to_none=True)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    scheduler.step()
    ema.update_parameters(model)
    iter_num += 1
    checkpoint = {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        "scaler": scaler.state_dict(),
        "ema": ema.state_dict(),
        "iter": iter_num,
        "perm": torch.from_numpy(perm),
        "cursor": cursor,
        "rng": {"torch": torch.get_rng_state(), "numpy": shuffle.bit_generator.state},
    }
    torch.save(checkpoint, os.path.join(args.out, f"ckpt_{iter_num}.pt"))
    print(f"iter {iter_num}: loss {loss.item():.9g}, scale {scaler.get_scale():g}")
