"""A LambdaLR warm-up whose scheduler the resume builds after loading the optimizer: the classic restore-order slip.

    python -B verify_resume.py --output runs/order \
        --train-cmd "python -B tests/trainers/corpus/scheduler_order.py --bug build-after-load"

A scheduler's constructor steps once and writes `base_lr * lambda(0)` into the param groups. Built
before `optimizer.load_state_dict()`, that is overwritten by the saved lr; built after it, it
overwrites the restored lr, and `scheduler.load_state_dict()` restores the scheduler's counters but
not the optimizer's lr.

Bug `build-after-load`: the first resumed update runs with the warm-up's first lr; the scheduler's
own state is restored exactly (and matches the continuous run's), and so is the optimizer's: the
schedule was applied otherwise. True cause: `scheduler` (made after the load). Parts: model, optimizer, scheduler, data,
rng-numpy, rng-torch.
"""

import _corpus
import numpy as np
import torch

from resumeproof import kit

PARTS = ("model", "optimizer", "scheduler", "data", "rng-numpy", "rng-torch")
args, flags = _corpus.parse(PARTS, __doc__, bugs=("build-after-load",))
kit.configure_torch()


def warmup(step: int) -> float:
    return min(1.0, (step + 1) / 8)


torch.manual_seed(0)
x, y = _corpus.regression(16)
model = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.Tanh(), torch.nn.Dropout(0.2), torch.nn.Linear(8, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
gens = kit.Generators(numpy=np.random.default_rng(0), torch=torch.default_generator)
order = kit.ShuffledOrder.fresh(16, gens["numpy"])
scheduler = None if flags.bug else torch.optim.lr_scheduler.LambdaLR(optimizer, warmup)
step, history = 0, []

if args.resume:
    ckpt = kit.load_checkpoint(args.resume)
    for part, thing in (("model", model), ("optimizer", optimizer), ("data", order)):
        if part not in args.omit:
            thing.load_state_dict(ckpt[part])
    if scheduler is None:
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, warmup)  # the bug: after the optimizer's load
    if "scheduler" not in args.omit:
        scheduler.load_state_dict(ckpt["scheduler"])
    step, history = ckpt["step"], ckpt["history"]
    gens.restore(ckpt["rng"], [n for n in gens.names if f"rng-{n}" not in args.omit])
elif scheduler is None:
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, warmup)

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
ckpt = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict()}
ckpt |= {"data": order.state_dict(), "rng": gens.state(), "step": step, "history": history}
kit.save_checkpoint(args.output / "checkpoint.pt", ckpt)
kit.write_summary(
    args.output,
    step=step,
    history=history,
    state={key: ckpt[key] for key in ("model", "optimizer", "scheduler", "data")},
    next={"lr": optimizer.param_groups[0]["lr"], "rng": gens.peek()},
    eval={"mse": torch.nn.functional.mse_loss(model.eval()(x), y).item()},
    meta=_corpus.meta(args, PARTS),
)
