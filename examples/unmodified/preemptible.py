"""A preemptible training script, written with no thought of resumeproof: it saves only when told to stop (SIGTERM,
as a cluster's preemption sends it) and at the end, into a directory per step (`step-{N}/model.pt` and
`step-{N}/trainer.pt`), with a LambdaLR warm-up, numpy-shuffled epochs and its own flag names.
`resumeproof verify --observe --stop sigterm` verifies it with no line changed (docs/observe.md):

    cd examples/unmodified
    resumeproof verify --observe --stop sigterm --output runs/preemptible \\
      --train-cmd  "python preemptible.py --total {steps} --dir {run}" \\
      --resume-cmd "python preemptible.py --total {steps} --dir {run} --from {checkpoint}" \\
      --checkpoint "{run}/step-{step}"

`--forget-schedule` resumes the way a common bug does: the warm-up's scheduler is built again and never loaded.
"""

import argparse
import os
import signal

import numpy as np
import torch

p = argparse.ArgumentParser()
p.add_argument("--total", type=int, default=12, help="optimizer steps of the whole run")
p.add_argument("--dir", required=True)
p.add_argument("--from", dest="start", default=None, help="a step-N directory to resume from")
p.add_argument("--forget-schedule", action="store_true")
args = p.parse_args()

torch.set_num_threads(1)
torch.set_default_dtype(torch.float64)
torch.manual_seed(0)
rng = np.random.default_rng(0)
x = torch.linspace(-2, 2, 48).reshape(24, 2)
y = (x[:, :1] * x[:, 1:]).sin()

model = torch.nn.Sequential(torch.nn.Linear(2, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(1.0, (step + 1) / 6))
step, order, position = 0, rng.permutation(24), 0

if args.start:
    model.load_state_dict(torch.load(os.path.join(args.start, "model.pt"), weights_only=True))
    state = torch.load(os.path.join(args.start, "trainer.pt"), weights_only=False)  # its own file: numpy state
    optimizer.load_state_dict(state["optimizer"])
    if not args.forget_schedule:
        schedule.load_state_dict(state["schedule"])
    step, order, position = state["step"], state["order"], state["position"]
    rng.bit_generator.state = state["rng"]

preempted = []
signal.signal(signal.SIGTERM, lambda *_: preempted.append(True))


def save() -> None:
    where = os.path.join(args.dir, f"step-{step}")
    os.makedirs(where, exist_ok=True)
    torch.save(model.state_dict(), os.path.join(where, "model.pt"))
    trainer = {"optimizer": optimizer.state_dict(), "schedule": schedule.state_dict(), "step": step}
    torch.save(trainer | {"order": order, "position": position, "rng": rng.bit_generator.state}, f"{where}/trainer.pt")


while step < args.total:
    if position == len(order):
        order, position = rng.permutation(24), 0
    rows = order[position : position + 4]
    position += 4
    loss = torch.nn.functional.mse_loss(model(x[rows]), y[rows])
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    schedule.step()
    step += 1
    if preempted:
        save()
        raise SystemExit(0)
save()
