"""Gradient accumulation over 3 micro-batches of a shuffling DataLoader, resumed mid-epoch by skipping batches.

    python -B verify_resume.py --output runs/accum-skip \
        --train-cmd "python -B tests/trainers/corpus_other/accum_skip.py --bug skip-updates"

No resumeproof (tests/trainers/corpus_other/_plain.py); the loop of a transformers-era script: `for epoch ...: for
i, batch in enumerate(loader)`, the loss divided by the accumulation steps, an optimizer update every third
micro-batch. An epoch is 6 micro-batches, 2 updates. The checkpoint holds the epoch, the updates done in it and the
loader generator's state at the epoch's start; the correct resume rebuilds the epoch's order and skips the
micro-batches already consumed: 3 per update done in the epoch.

Bugs (true cause `data` for both):
- `skip-updates`: the resume skips as many micro-batches as updates done in the epoch, not 3 times as many (the
  off-by-accumulation count of `steps_trained_in_current_epoch`): it trains again on micro-batches already used.
- `epoch-only`: the checkpoint holds the epoch alone, the PyTorch tutorial's "general checkpoint": the resume starts
  the saved epoch over from its first micro-batch.
Parts: model, optimizer, data (epoch, updates done in it, the loader generator), rng-torch (dropout).
"""

import _plain
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

PARTS = ("model", "optimizer", "data", "rng-torch")
ACCUM, MICRO = 3, 4

args = _plain.get_args(__doc__, PARTS, bugs=("skip-updates", "epoch-only"))
torch.set_num_threads(1)
torch.set_default_dtype(torch.float64)
torch.manual_seed(99)

features = torch.randn(24, 4)
labels = (features[:, :2].sum(1) - features[:, 2] * features[:, 3]).unsqueeze(1)
loader_gen = torch.Generator().manual_seed(5)
loader = DataLoader(
    TensorDataset(torch.arange(24), features, labels), batch_size=MICRO, shuffle=True, generator=loader_gen
)
model = nn.Sequential(nn.Linear(4, 20), nn.ReLU(), nn.Dropout(0.1), nn.Linear(20, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)

global_step, start_epoch, updates_in_epoch, history = 0, 0, 0, []
if args.resume:
    ckpt = _plain.load(args.resume)
    if _plain.restore(args, "model"):
        model.load_state_dict(ckpt["model"])
    if _plain.restore(args, "optimizer"):
        optimizer.load_state_dict(ckpt["optimizer"])
    if _plain.restore(args, "data"):
        start_epoch = ckpt["epoch"]
        updates_in_epoch = ckpt.get("updates_in_epoch", 0)
        loader_gen.set_state(ckpt["epoch_generator"])
    if _plain.restore(args, "rng-torch"):
        torch.set_rng_state(ckpt["rng"])
    global_step, history = ckpt["global_step"], ckpt["history"]

skip = updates_in_epoch if args.bug == "skip-updates" else ACCUM * updates_in_epoch
end, epoch = global_step + args.steps, start_epoch
epoch_generator = loader_gen.get_state()
rows, total = [], 0.0
while global_step < end:
    epoch_generator = loader_gen.get_state()
    updates_in_epoch = 0 if epoch != start_epoch else updates_in_epoch
    for i, (idx, xb, yb) in enumerate(loader):
        if epoch == start_epoch and i < skip:
            continue
        model.train()
        loss = nn.functional.mse_loss(model(xb), yb) / ACCUM
        loss.backward()
        rows, total = rows + idx.tolist(), total + loss.item()
        if (i + 1) % ACCUM == 0:
            lr = optimizer.param_groups[0]["lr"]
            optimizer.step()
            optimizer.zero_grad()
            global_step += 1
            updates_in_epoch += 1
            history.append({"step": global_step, "rows": rows, "lr": lr, "loss": total})
            rows, total = [], 0.0
            if global_step == end:
                break
    else:
        epoch += 1
        continue
    break

ckpt = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch}
if args.bug != "epoch-only":
    ckpt["updates_in_epoch"] = updates_in_epoch
ckpt |= {"epoch_generator": epoch_generator, "rng": torch.get_rng_state(), "global_step": global_step}
_plain.save(ckpt | {"history": history}, args.output / "checkpoint.pt")
model.eval()
with torch.no_grad():
    mse = nn.functional.mse_loss(model(features), labels).item()
_plain.write_summary(
    args,
    PARTS,
    step=global_step,
    history=history,
    state={"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch},
    next={"lr": optimizer.param_groups[0]["lr"], "rng": {"torch": _plain.peek(), "loader": _plain.peek(loader_gen)}},
    eval={"mse": mse},
)
