"""A linear warm-up then cosine decay: SequentialLR([LinearLR, CosineAnnealingLR]), stepped every update.

    python -B verify_resume.py --output runs/warmup \
        --train-cmd "python -B tests/trainers/corpus/warmup.py --bug recreate-scheduler"

The checkpoint is laid out by component (`net`, `adamw`, `lr_sched`, `loader`, `generators`).

Bug `recreate-scheduler`: the schedule is rebuilt on resume and not loaded ("it is a function of
the step"): the optimizer's restored lr is kept for the first resumed update, then the warm-up
starts over from it. True cause: `scheduler`. Parts: model, optimizer, scheduler, data,
rng-numpy, rng-torch.
"""

import _corpus
import numpy as np
import torch
from torch.optim.lr_scheduler import CosineAnnealingLR, LinearLR, SequentialLR

from resumeproof import kit

PARTS = ("model", "optimizer", "scheduler", "data", "rng-numpy", "rng-torch")
args, flags = _corpus.parse(PARTS, __doc__, bugs=("recreate-scheduler",))
kit.configure_torch()

torch.manual_seed(0)
x, y = _corpus.regression(16)
model = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.Tanh(), torch.nn.Dropout(0.2), torch.nn.Linear(8, 1))
optimizer = torch.optim.AdamW(model.parameters(), lr=0.05)
warm = LinearLR(optimizer, start_factor=0.1, total_iters=4)
scheduler = SequentialLR(optimizer, [warm, CosineAnnealingLR(optimizer, T_max=8)], milestones=[4])
gens = kit.Generators(numpy=np.random.default_rng(0), torch=torch.default_generator)
order = kit.ShuffledOrder.fresh(16, gens["numpy"])
step, history = 0, []

if args.resume:
    ckpt = kit.load_checkpoint(args.resume)
    if "model" not in args.omit:
        model.load_state_dict(ckpt["net"])
    if "scheduler" not in args.omit and flags.bug is None:
        scheduler.load_state_dict(ckpt["lr_sched"])
    if "optimizer" not in args.omit:
        optimizer.load_state_dict(ckpt["adamw"])
    if "data" not in args.omit:
        order.load_state_dict(ckpt["loader"])
    step, history = ckpt["progress"]["step"], ckpt["progress"]["history"]
    gens.restore(ckpt["generators"], [n for n in gens.names if f"rng-{n}" not in args.omit])

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
ckpt = {"net": model.state_dict(), "adamw": optimizer.state_dict(), "lr_sched": scheduler.state_dict()}
ckpt |= {"loader": order.state_dict(), "generators": gens.state(), "progress": {"step": step, "history": history}}
kit.save_checkpoint(args.output / "checkpoint.pt", ckpt)
kit.write_summary(
    args.output,
    step=step,
    history=history,
    state={"net": ckpt["net"], "adamw": ckpt["adamw"], "lr_sched": ckpt["lr_sched"], "loader": ckpt["loader"]},
    next={"lr": optimizer.param_groups[0]["lr"], "rng": gens.peek()},
    eval={"mse": torch.nn.functional.mse_loss(model.eval()(x), y).item()},
    meta=_corpus.meta(args, PARTS),
)
