"""ReduceLROnPlateau stepped on every update's loss: the lr halves after two updates without a new best.

    python -B verify_resume.py --output runs/plateau --train-cmd "python -B tests/trainers/corpus/plateau.py"

The scheduler's state_dict is reported in `state.sched` as it is, and it holds
`mode_worse = inf` (the worst value of its mode, a constant) and, before the first step,
`best = inf`: a correct resume reports `inf` in both runs, which an exact comparison must accept
as equal when the value is a constant of the object, not a result.

Bug `lose-scheduler`: the scheduler is not saved; the resumed run starts it over (no best, no bad
updates counted, its epoch counter at 0). True cause: `scheduler`. Parts: model, optimizer,
scheduler, data, rng-numpy, rng-torch.
"""

import _corpus
import numpy as np
import torch

from resumeproof import kit

PARTS = ("model", "optimizer", "scheduler", "data", "rng-numpy", "rng-torch")
args, flags = _corpus.parse(PARTS, __doc__, bugs=("lose-scheduler",))
kit.configure_torch()

torch.manual_seed(0)
x, y = _corpus.regression(16)
model = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.Tanh(), torch.nn.Dropout(0.2), torch.nn.Linear(8, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.2)
scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, factor=0.5, patience=1, threshold=0.0)
gens = kit.Generators(numpy=np.random.default_rng(0), torch=torch.default_generator)
order = kit.ShuffledOrder.fresh(16, gens["numpy"])
step, history = 0, []

if args.resume:
    ckpt = kit.load_checkpoint(args.resume)
    parts = [("model", model), ("optimizer", optimizer), ("data", order)]
    if flags.bug is None:
        parts.append(("scheduler", scheduler))
    for part, thing in parts:
        if part not in args.omit:
            thing.load_state_dict(ckpt[part])
    step, history = ckpt["step"], ckpt["history"]
    gens.restore(ckpt["rng"], [n for n in gens.names if f"rng-{n}" not in args.omit])

for _ in range(args.steps):
    rows = order.take(4, gens["numpy"])
    lr = optimizer.param_groups[0]["lr"]
    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x[rows]), y[rows])
    loss.backward()
    optimizer.step()
    scheduler.step(loss.item())
    step += 1
    history.append(kit.record(step, rows, lr, loss.item()))

args.output.mkdir(parents=True)
ckpt = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "data": order.state_dict()}
if flags.bug is None:
    ckpt["scheduler"] = scheduler.state_dict()
kit.save_checkpoint(args.output / "checkpoint.pt", ckpt | {"rng": gens.state(), "step": step, "history": history})
kit.write_summary(
    args.output,
    step=step,
    history=history,
    state={"model": model.state_dict(), "optimizer": optimizer.state_dict(), "sched": scheduler.state_dict()},
    next={"lr": optimizer.param_groups[0]["lr"], "rng": gens.peek()},
    eval={"mse": torch.nn.functional.mse_loss(model.eval()(x), y).item()},
    meta=_corpus.meta(args, PARTS),
)
