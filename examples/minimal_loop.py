"""A complete training loop that speaks resume-protocol/1 through the trainer kit (docs/kit.md).

python -B verify_resume.py --output runs/minimal --train-cmd "python -B examples/minimal_loop.py"
"""

import numpy as np
import torch

from resumeproof import kit

args = kit.flags.parse(parts=("model", "optimizer", "scheduler", "data", "rng-numpy", "rng-torch"))
kit.refuse_existing(args.output)  # before any work, so that a refused run leaves nothing behind
kit.configure_torch()  # one thread, float64, deterministic algorithms

torch.manual_seed(0)
x = torch.linspace(-1, 1, 32).reshape(16, 2)
y = x[:, :1] - 2 * x[:, 1:]
model = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.Tanh(), torch.nn.Dropout(0.2), torch.nn.Linear(8, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=3, gamma=0.5)  # before any load_state_dict
gens = kit.Generators(numpy=np.random.default_rng(0), torch=torch.default_generator)  # Dropout draws from torch's
order = kit.ShuffledOrder.fresh(16, gens["numpy"])  # the epoch's permutation and the position inside it
step, history = 0, []

if args.resume:
    state = kit.load_checkpoint(args.resume)  # its sha256 sidecar, then torch.load(weights_only=True)
    for part, thing in (("model", model), ("scheduler", scheduler), ("optimizer", optimizer), ("data", order)):
        if part not in args.omit:
            thing.load_state_dict(state[part])
    step, history = state["step"], state["history"]
    gens.restore(state["rng"], args.restored_generators(gens.names))  # last: nothing may draw before the loop

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
    meta=args.meta(),
)
