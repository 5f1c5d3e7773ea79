"""A training script in nanoGPT's style, written with no thought of resumeproof: its own flags, batches drawn
with `torch.randint` from the global generator, dropout, AdamW with a hand-set cosine learning rate, and a
checkpoint `ckpt_{iter}.pt` after every `--save-every` iterations. `resumeproof verify --observe` verifies it
with no line changed (docs/observe.md):

    cd examples/unmodified
    resumeproof verify --observe --output runs/nanogpt --faults optimizer,model \\
      --train-cmd  "python nanogpt_style.py --max-iters {steps} --out-dir {run}" \\
      --resume-cmd "python nanogpt_style.py --max-iters {steps} --out-dir {run} --resume {checkpoint}" \\
      --checkpoint "{run}/ckpt_{step}.pt"

nanoGPT's own resume restores the model, the optimizer and the iteration, and reseeds the generator: the batches
after a resume are not the ones the run would have drawn. `--no-rng-in-checkpoint` resumes that way (the bug the
verifier must catch); the default also saves and restores the generator, which makes the resume exact.
"""

import argparse
import math
import os

import torch
from torch import nn

p = argparse.ArgumentParser()
p.add_argument("--max-iters", type=int, default=20)
p.add_argument("--out-dir", required=True)
p.add_argument("--resume", default=None, help="a ckpt_*.pt to resume from")
p.add_argument("--save-every", type=int, default=1)
p.add_argument("--learning-rate", type=float, default=3e-3)
p.add_argument("--rng-in-checkpoint", action=argparse.BooleanOptionalAction, default=True)
args = p.parse_args()

torch.set_num_threads(1)
torch.set_default_dtype(torch.float64)
torch.manual_seed(1337)
os.makedirs(args.out_dir, exist_ok=True)

# a toy "corpus": the task is to predict the sum of a window of 8 numbers
data = torch.randn(512, 8, generator=torch.Generator().manual_seed(0))
targets = data.sum(dim=1, keepdim=True)


def get_batch(batch_size: int = 16) -> tuple[torch.Tensor, torch.Tensor]:
    ix = torch.randint(len(data), (batch_size,))  # the global generator, as nanoGPT's get_batch draws
    return data[ix], targets[ix]


model = nn.Sequential(nn.Linear(8, 32), nn.GELU(), nn.Dropout(0.1), nn.Linear(32, 1))
optimizer = torch.optim.AdamW(model.parameters(), lr=args.learning_rate, weight_decay=0.1)


def get_lr(it: int) -> float:  # warm-up, then cosine decay to a tenth, as nanoGPT's
    warmup = 4
    if it < warmup:
        return args.learning_rate * (it + 1) / warmup
    ratio = (it - warmup) / max(1, args.max_iters - warmup)
    return args.learning_rate * (0.1 + 0.45 * (1 + math.cos(math.pi * ratio)))


iter_num = 0
if args.resume:
    checkpoint = torch.load(args.resume, map_location="cpu", weights_only=True)
    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    iter_num = checkpoint["iter_num"]
    if "rng" in checkpoint:
        torch.set_rng_state(checkpoint["rng"])

model.train()
while iter_num < args.max_iters:
    for group in optimizer.param_groups:
        group["lr"] = get_lr(iter_num)
    x, y = get_batch()
    loss = nn.functional.mse_loss(model(x), y)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    iter_num += 1
    if iter_num % args.save_every == 0:
        checkpoint = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "iter_num": iter_num}
        if args.rng_in_checkpoint:
            checkpoint["rng"] = torch.get_rng_state()
        torch.save(checkpoint, os.path.join(args.out_dir, f"ckpt_{iter_num}.pt"))
    print(f"iter {iter_num}: loss {loss.item():.4f}")
