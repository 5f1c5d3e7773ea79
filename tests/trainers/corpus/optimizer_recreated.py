"""A resume that loads the weights, then builds a new optimizer for them, as after moving a model to its device.

    python -B verify_resume.py --output runs/optim \
        --train-cmd "python -B tests/trainers/corpus/optimizer_recreated.py --bug recreate-optimizer"

The checkpoint and the summary use short keys (`net`, `opt`, `sched`, `order`, `rngs`).

Bug `recreate-optimizer`: after `model.load_state_dict`, the resume builds a fresh AdamW over the
parameters and never loads the saved one. The StepLR scheduler, restored exactly, still drives
the *old* optimizer: the new one trains with the initial lr and fresh moments, while
`state.sched` matches the continuous run. True cause: `optimizer`. Parts: model, optimizer,
scheduler, data, rng-numpy, rng-torch.
"""

import _corpus
import numpy as np
import torch

from resumeproof import kit

PARTS = ("model", "optimizer", "scheduler", "data", "rng-numpy", "rng-torch")
LR = 0.05
args, flags = _corpus.parse(PARTS, __doc__, bugs=("recreate-optimizer",))
kit.configure_torch()

torch.manual_seed(0)
x, y = _corpus.regression(16)
model = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.Tanh(), torch.nn.Dropout(0.2), torch.nn.Linear(8, 1))
optimizer = torch.optim.AdamW(model.parameters(), lr=LR)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=3, gamma=0.5)
gens = kit.Generators(numpy=np.random.default_rng(0), torch=torch.default_generator)
order = kit.ShuffledOrder.fresh(16, gens["numpy"])
step, history = 0, []

if args.resume:
    ckpt = kit.load_checkpoint(args.resume)
    if "model" not in args.omit:
        model.load_state_dict(ckpt["net"])
    if flags.bug == "recreate-optimizer":
        optimizer = torch.optim.AdamW(model.parameters(), lr=LR)  # the bug: the saved one is never loaded
    if "scheduler" not in args.omit:
        scheduler.load_state_dict(ckpt["sched"])
    if "optimizer" not in args.omit and flags.bug is None:
        optimizer.load_state_dict(ckpt["opt"])
    if "data" not in args.omit:
        order.load_state_dict(ckpt["order"])
    step, history = ckpt["step"], ckpt["history"]
    gens.restore(ckpt["rngs"], [n for n in gens.names if f"rng-{n}" not in args.omit])

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
ckpt = {"net": model.state_dict(), "opt": optimizer.state_dict(), "sched": scheduler.state_dict()}
ckpt |= {"order": order.state_dict(), "rngs": gens.state(), "step": step, "history": history}
kit.save_checkpoint(args.output / "checkpoint.pt", ckpt)
kit.write_summary(
    args.output,
    step=step,
    history=history,
    state={key: ckpt[key] for key in ("net", "opt", "sched", "order")},
    next={"lr": optimizer.param_groups[0]["lr"], "rng": gens.peek()},
    eval={"mse": torch.nn.functional.mse_loss(model.eval()(x), y).item()},
    meta=_corpus.meta(args, PARTS),
)
