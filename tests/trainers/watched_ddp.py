"""A DDP loop under torchrun as users write it, for `resumeproof watch` (tests/e2e/test_watch.py): rank 0 saves the
checkpoint alone (its own generator with it), every rank loads it when the folder has one. `--rank0-only-optimizer`
is the bug of a loop whose ranks other than 0 skip the optimizer's state on load.

    torchrun --standalone --nproc-per-node 2 watched_ddp.py --out DIR --steps 4 [--rank0-only-optimizer]
"""

import argparse
import os
from pathlib import Path

import torch
import torch.distributed as dist

parser = argparse.ArgumentParser()
parser.add_argument("--out", type=Path, required=True)
parser.add_argument("--steps", type=int, default=4)
parser.add_argument("--rank0-only-optimizer", action="store_true")
args = parser.parse_args()
dist.init_process_group("gloo")
rank = dist.get_rank()
checkpoint = args.out / "ckpt.pt"

torch.manual_seed(rank)
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Linear(8, 1)))
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
if checkpoint.exists():
    state = torch.load(checkpoint, weights_only=True)
    model.module.load_state_dict(state["model"])
    if rank == 0 or not args.rank0_only_optimizer:
        optimizer.load_state_dict(state["optimizer"])
    if rank == 0:
        torch.set_rng_state(state["rng"])

for _ in range(args.steps):
    loss = model(torch.randn(8, 4)).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()

if rank == 0:
    args.out.mkdir(parents=True, exist_ok=True)
    state = {"model": model.module.state_dict(), "optimizer": optimizer.state_dict(), "rng": torch.get_rng_state()}
    torch.save(state, args.out / "ckpt.tmp")
    os.replace(args.out / "ckpt.tmp", checkpoint)
dist.barrier()
dist.destroy_process_group()
