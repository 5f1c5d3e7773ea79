"""A DDP script run under torchrun, written with no thought of resumeproof: gloo on CPU, a DistributedSampler,
dropout, and a checkpoint directory per step (`step-{N}/`) with the model and optimizer written by rank 0 and each
rank's generator in a file of its own. `resumeproof verify --observe` verifies it under torchrun with no line
changed (docs/observe.md); the observer watches every worker:

    cd examples/unmodified
    T="torchrun --standalone --nproc-per-node 2 ddp_script.py --steps {steps} --dir {run}"
    resumeproof verify --observe --output runs/ddp --steps 6 --interrupt-at 3 \\
      --train-cmd "$T" --resume-cmd "$T --resume {checkpoint}" --checkpoint "{run}/step-{step}"

`--rank0-generator` resumes the way many scripts do: every rank restores rank 0's generator, so the other ranks'
dropout masks repeat rank 0's instead of continuing their own.
"""

import argparse
import itertools
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=12)
p.add_argument("--dir", required=True)
p.add_argument("--resume", default=None, help="a step-N directory")
p.add_argument("--rank0-generator", action="store_true")
args = p.parse_args()

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.set_num_threads(1)
torch.set_default_dtype(torch.float64)
torch.manual_seed(rank)  # each rank its own dropout
x = torch.linspace(-2, 2, 64).reshape(32, 2)
rows = torch.utils.data.TensorDataset(x, (x[:, :1] * x[:, 1:]).sin())
sampler = torch.utils.data.DistributedSampler(rows, shuffle=True, seed=0)
# 4 batches per rank and epoch. A generator of its own: each new iterator draws a seed, which would otherwise
# come from the global generator after the resume restored it, and move every later dropout mask.
loader = torch.utils.data.DataLoader(rows, batch_size=4, sampler=sampler, generator=torch.Generator())

torch.manual_seed(0)  # the same initial weights on every rank
net = torch.nn.Sequential(torch.nn.Linear(2, 16), torch.nn.Tanh(), torch.nn.Dropout(0.2), torch.nn.Linear(16, 1))
torch.manual_seed(rank)
model = DistributedDataParallel(net)
optimizer = torch.optim.AdamW(model.parameters(), lr=0.01)
step = 0
if args.resume:
    saved = torch.load(os.path.join(args.resume, "train.pt"), weights_only=True)
    net.load_state_dict(saved["model"])
    optimizer.load_state_dict(saved["optimizer"])
    step = saved["step"]
    mine = 0 if args.rank0_generator else rank
    torch.set_rng_state(torch.load(os.path.join(args.resume, f"rng-{mine}.pt"), weights_only=True))


def save() -> None:
    where = os.path.join(args.dir, f"step-{step}")
    os.makedirs(where, exist_ok=True)
    torch.save(torch.get_rng_state(), os.path.join(where, f"rng-{rank}.pt"))
    if rank == 0:
        state = {"model": net.state_dict(), "optimizer": optimizer.state_dict(), "step": step}
        torch.save(state, os.path.join(where, "train.pt"))
    dist.barrier()  # the checkpoint is whole before any rank goes on


while step < args.steps:
    epoch, done = divmod(step, len(loader))
    sampler.set_epoch(epoch)
    for inputs, targets in itertools.islice(loader, done, None):  # the batches this epoch has not seen
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(inputs), targets).backward()
        optimizer.step()
        step += 1
        save()
        if step == args.steps:
            break
dist.destroy_process_group()
