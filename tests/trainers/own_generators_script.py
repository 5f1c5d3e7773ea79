"""A training script in nanoGPT's style whose data order comes from a generator of its own, restored with that
generator's own setter, written with no thought of resumeproof: `resumeproof verify --observe` verifies it, and its
negative control blocks that setter (observe/block.py).

    resumeproof verify --observe --output runs/own-generators --steps 6 --interrupt-at 3 \\
      --train-cmd  "python -B tests/trainers/own_generators_script.py --generator numpy --iters {steps} --out {run}" \\
      --resume-cmd "python -B tests/trainers/own_generators_script.py --generator numpy --iters {steps} --out {run} \\
                    --resume {checkpoint}" \\
      --checkpoint "{run}/ckpt_{step}.pt"

Float64 on one thread: an 8 -> 16 -> 1 net without dropout (torch's global generator draws the initial weights and
nothing after them), AdamW, batches of 4 from a per-epoch permutation of 12 rows that the script's own generator
draws (`--generator`): a `torch.Generator` through `torch.randperm`, a NumPy `Generator` from `np.random.default_rng`
through `permutation`, or a `random.Random` through `shuffle`. The first epoch's permutation is drawn at the first
update, so a generator left as seeded draws the first epoch's order again. It writes `{out}/ckpt_{iter}.pt` after
every update: model, optimizer, iter, the epoch's permutation and cursor, the generator's state. A resume restores
all of it, the generator last, with its own setter: `g.set_state(...)`, `rng.bit_generator.state = ...`,
`r.setstate(...)`.

Flags: `--iters N` (the run's length), `--out DIR`, `--resume CKPT`, `--generator torch|numpy|random`.
"""

import argparse
import os
import random
from typing import Any

import numpy as np
import torch
from torch import nn

p = argparse.ArgumentParser(description="Train a toy regression on batches its own generator orders.")
p.add_argument("--iters", type=int, default=10, help="iterations in all")
p.add_argument("--out", required=True, help="where ckpt_{iter}.pt goes")
p.add_argument("--resume", default=None, help="a ckpt_*.pt to resume from")
p.add_argument("--generator", choices=("torch", "numpy", "random"), default="torch", help="the data order's generator")
args = p.parse_args()

torch.set_num_threads(1)
torch.set_default_dtype(torch.float64)
torch.manual_seed(1337)
os.makedirs(args.out, exist_ok=True)
rows, batch_size, learning_rate, seed = 12, 4, 3e-3, 1337

# a toy "corpus": predict the sum of a window of 8 numbers
data = torch.randn(rows, 8, generator=torch.Generator().manual_seed(0))
targets = data.sum(dim=1, keepdim=True)

# The data order's own generator: how it draws an epoch's permutation, saves its state and restores it.
if args.generator == "torch":
    shuffle = torch.Generator().manual_seed(seed)

    def permutation() -> list[int]:
        return torch.randperm(rows, generator=shuffle).tolist()

    def generator_state() -> Any:
        return shuffle.get_state()

    def restore_generator(state: Any) -> None:
        shuffle.set_state(state)

elif args.generator == "numpy":
    rng = np.random.default_rng(seed)

    def permutation() -> list[int]:
        return rng.permutation(rows).tolist()

    def generator_state() -> Any:
        return rng.bit_generator.state

    def restore_generator(state: Any) -> None:
        rng.bit_generator.state = state

else:
    r = random.Random(seed)

    def permutation() -> list[int]:
        order = list(range(rows))
        r.shuffle(order)
        return order

    def generator_state() -> Any:
        return r.getstate()

    def restore_generator(state: Any) -> None:
        r.setstate(state)


order: list[int] = []  # the epoch's permutation, drawn at its first update
cursor = 0


def get_batch() -> tuple[torch.Tensor, torch.Tensor]:
    global order, cursor
    if cursor == len(order):  # a new epoch (the first one too)
        order, cursor = permutation(), 0
    ix = torch.tensor(order[cursor : cursor + batch_size])
    cursor += batch_size
    return data[ix], targets[ix]


model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1))
optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate, weight_decay=0.1)

iter_num = 0
if args.resume:
    checkpoint = torch.load(args.resume, map_location="cpu", weights_only=True)
    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    iter_num, order, cursor = checkpoint["iter"], checkpoint["order"], checkpoint["cursor"]
    restore_generator(checkpoint["generator"])  # last: nothing may draw between the restore and the first iteration

model.train()
while iter_num < args.iters:
    x, y = get_batch()
    loss = nn.functional.mse_loss(model(x), y)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    iter_num += 1
    checkpoint = {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "iter": iter_num,
        "order": order,
        "cursor": cursor,
        "generator": generator_state(),
    }
    torch.save(checkpoint, os.path.join(args.out, f"ckpt_{iter_num}.pt"))
    print(f"iter {iter_num}: loss {loss.item():.9g}")
