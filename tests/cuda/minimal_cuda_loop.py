"""The minimal loop (examples/minimal_loop.py) on a GPU: torch set up for exact CUDA runs, the devices' generators
saved, restored and peeked on their device, the GPU named in meta.

python -B verify_resume.py --output runs/cuda --faults all --train-cmd "python -B tests/cuda/minimal_cuda_loop.py"

RESUMEPROOF_TEST_DEVICE=cpu runs the same loop on the CPU (a check of the script itself, without a GPU).
"""

import os

import numpy as np
import torch

from resumeproof import kit
from resumeproof.common.protocol import rng_part

DEVICE = os.environ.get("RESUMEPROOF_TEST_DEVICE", "cuda")
# Dropout draws from the device's generator: every CUDA device's default one on a GPU (the global `cuda`),
# torch's default on the CPU. The weights are initialised on the CPU before they move, from a seed.
device_rng = {"cuda": torch.cuda} if DEVICE == "cuda" else {"torch": torch.default_generator}
gens = kit.Generators(numpy=np.random.default_rng(0), **device_rng)
args = kit.flags.parse(parts=("model", "optimizer", "scheduler", "data", *map(rng_part, gens.names)))
kit.refuse_existing(args.output)
setup = kit.configure_torch(device=DEVICE)  # before CUDA starts: cuBLAS workspace, cuDNN, TF32 off, deterministic

torch.manual_seed(0)
x = torch.linspace(-1, 1, 32).reshape(16, 2).to(DEVICE)
y = x[:, :1] - 2 * x[:, 1:]
model = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.Tanh(), torch.nn.Dropout(0.2), torch.nn.Linear(8, 1))
model.to(DEVICE)
optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=3, gamma=0.5)  # before any load_state_dict
order = kit.ShuffledOrder.fresh(16, gens["numpy"])
step, history = 0, []

if args.resume:
    state = kit.load_checkpoint(args.resume)  # on the CPU; load_state_dict moves each tensor to its parameter
    for part, thing in (("model", model), ("scheduler", scheduler), ("optimizer", optimizer), ("data", order)):
        if part not in args.omit:
            thing.load_state_dict(state[part])
    step, history = state["step"], state["history"]
    gens.check(state["rng"])
    gens.restore(state["rng"], [name for name in gens.names if rng_part(name) not in args.omit])  # last

for _ in range(args.steps):
    rows = order.take(4, gens["numpy"])
    lr = optimizer.param_groups[0]["lr"]
    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x[rows]), y[rows])
    loss.backward()
    optimizer.step()
    scheduler.step()
    step += 1
    history.append(kit.record(step, rows, lr, loss.item()))

args.output.mkdir(parents=True)
state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict()}
state |= {"data": order.state_dict(), "rng": gens.state(), "step": step, "history": history}
kit.save_checkpoint(args.output / "checkpoint.pt", state)
kit.write_summary(
    args.output,
    step=step,
    history=history,
    state={key: state[key] for key in ("model", "optimizer", "scheduler", "data")},
    next={"lr": optimizer.param_groups[0]["lr"], "rng": gens.peek()},
    eval={"mse": torch.nn.functional.mse_loss(model.eval()(x), y).item()},
    meta={**args.meta(), "device": setup.device, "gpu": kit.device_identity(setup.device)},
)
