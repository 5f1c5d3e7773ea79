"""OneCycleLR stepped every batch, its schedule planned for 20 updates, resumed as its documentation suggests.

    python -B verify_resume.py --output runs/onecycle \
        --train-cmd "python -B tests/trainers/corpus_other/onecycle.py --bug last-epoch"

No resumeproof (tests/trainers/corpus_other/_plain.py); a small config dataclass and a loop over a shuffled data
set. The correct resume builds the scheduler as a fresh run does and loads its state_dict.

Bug `last-epoch`: the scheduler is not saved; the resume rebuilds it with `last_epoch=global_step`, as
OneCycleLR's documentation reads ("last_epoch: the index of the last batch. This parameter is used when resuming a
training job ... this number represents the total number of batches computed"). Building a scheduler steps it once,
so the rebuilt one is one update ahead: every resumed update runs at the next update's lr. True cause: `sched`.
Parts: model, optim, sched, data (the order and the position), rng-torch (dropout).
"""

from dataclasses import dataclass

import _plain
import torch
from torch import nn
from torch.optim.lr_scheduler import OneCycleLR

PARTS = ("model", "optim", "sched", "data", "rng-torch")


@dataclass(frozen=True)
class Config:
    rows: int = 24
    batch: int = 6
    max_lr: float = 0.05
    total_steps: int = 20  # the planned run; the verifier runs fewer
    seed: int = 7


cfg = Config()
args = _plain.get_args(__doc__, PARTS, bugs=("last-epoch",))
torch.set_num_threads(1)
torch.set_default_dtype(torch.float64)
torch.manual_seed(cfg.seed)

x = torch.rand(cfg.rows, 3) * 2 - 1
y = torch.sin(2 * x[:, :1]) + x[:, 1:2] * x[:, 2:]
model = nn.Sequential(nn.Linear(3, 16), nn.GELU(), nn.Dropout(0.1), nn.Linear(16, 1))
optim = torch.optim.AdamW(model.parameters(), lr=cfg.max_lr)
sched = OneCycleLR(optim, max_lr=cfg.max_lr, total_steps=cfg.total_steps)
order_gen = torch.Generator().manual_seed(cfg.seed)
order, cursor = torch.randperm(cfg.rows, generator=order_gen), 0
global_step, history = 0, []

if args.resume:
    ck = _plain.load(args.resume)
    if _plain.restore(args, "model"):
        model.load_state_dict(ck["model"])
    if _plain.restore(args, "optim"):
        optim.load_state_dict(ck["optim"])
    global_step, history = ck["global_step"], ck["history"]
    if _plain.restore(args, "sched"):
        if args.bug == "last-epoch":
            sched = OneCycleLR(optim, max_lr=cfg.max_lr, total_steps=cfg.total_steps, last_epoch=global_step)
        else:
            sched.load_state_dict(ck["sched"])
    if _plain.restore(args, "data"):
        order, cursor = ck["order"], ck["cursor"]
        order_gen.set_state(ck["order_gen"])
    if _plain.restore(args, "rng-torch"):
        torch.set_rng_state(ck["rng"])

for _ in range(args.steps):
    if cursor == cfg.rows:
        order, cursor = torch.randperm(cfg.rows, generator=order_gen), 0
    idx = order[cursor : cursor + cfg.batch]
    cursor += cfg.batch
    model.train()
    pred = model(x[idx])
    loss = nn.functional.mse_loss(pred, y[idx])
    optim.zero_grad()
    loss.backward()
    optim.step()
    lr = sched.get_last_lr()[0]
    sched.step()
    global_step += 1
    history.append({"step": global_step, "rows": idx.tolist(), "lr": lr, "loss": loss.item()})

ck = {"model": model.state_dict(), "optim": optim.state_dict(), "global_step": global_step, "history": history}
if args.bug is None:
    ck["sched"] = sched.state_dict()
ck |= {"order": order, "cursor": cursor, "order_gen": order_gen.get_state(), "rng": torch.get_rng_state()}
_plain.save(ck, args.output / "checkpoint.pt")
model.eval()
with torch.no_grad():
    mse = nn.functional.mse_loss(model(x), y).item()
_plain.write_summary(
    args,
    PARTS,
    step=global_step,
    history=history,
    state={"model": model.state_dict(), "optim": optim.state_dict(), "sched": sched.state_dict(), "cursor": cursor},
    next={"lr": sched.get_last_lr()[0], "rng": {"torch": _plain.peek(), "order": _plain.peek(order_gen)}},
    eval={"mse": mse},
)
