"""An epoch-based image-classification script in timm's style, written with no thought of resumeproof: its length
in epochs, a checkpoint after every epoch named by the epoch's 0-based index (`checkpoint-0.pth.tar` holds the
state after the first epoch's updates), `--resume PATH`, an LR scheduler stepped once per epoch, a DataLoader that
shuffles from the global generator and a model with dropout. `resumeproof verify --observe` verifies it as it is
(docs/observe.md, "An epoch-based script with per-epoch checkpoints"):

    resumeproof verify --observe --epochs 3 --interrupt-at checkpoints --output runs/timm \\
      --train-cmd  "python timm_style.py --epochs {epochs} --output {run}" \\
      --resume-cmd "python timm_style.py --epochs {epochs} --output {run} --resume {checkpoint}" \\
      --checkpoint "{run}/checkpoint-{epoch}.pth.tar"

`--bug rng` resumes as timm does: the checkpoint holds no generator, so the resumed epoch's shuffle and dropout
draw from a freshly seeded one. `--bug scheduler` loads everything but the scheduler's state: the first resumed
epoch keeps the optimizer's restored rate, and from the next one the schedule runs an epoch behind.
"""

import argparse
import os

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

p = argparse.ArgumentParser(description="train a tiny classifier on synthetic 8x8 images")
p.add_argument("--epochs", type=int, default=3, help="passes over the data set")
p.add_argument("--output", required=True, help="directory for checkpoint-<epoch>.pth.tar")
p.add_argument("--resume", default="", help="a checkpoint to resume from: training goes on at its next epoch")
p.add_argument("--batch-size", type=int, default=4)
p.add_argument("--images", type=int, default=12, help="synthetic images in the data set")
p.add_argument("--bug", choices=("rng", "scheduler"), default=None, help="resume the way a common bug does")
args = p.parse_args()

torch.set_num_threads(1)
torch.manual_seed(42)
images = torch.randn(args.images, 3, 8, 8)
labels = torch.randint(0, 4, (args.images,))
loader = DataLoader(TensorDataset(images, labels), batch_size=args.batch_size, shuffle=True, drop_last=True)

model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.Dropout(0.2), nn.Flatten(), nn.Linear(4 * 8 * 8, 4))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
# Stepped once per epoch, in closed form (each epoch's rate from its index): a schedule started again stays behind.
scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda epoch: 1 / (1 + epoch))
start_epoch = 0

if args.resume:
    state = torch.load(args.resume, weights_only=True)
    model.load_state_dict(state["state_dict"])
    optimizer.load_state_dict(state["optimizer"])
    if args.bug != "scheduler":
        scheduler.load_state_dict(state["scheduler"])
    if args.bug != "rng":
        torch.set_rng_state(state["rng"])
    start_epoch = state["epoch"] + 1

os.makedirs(args.output, exist_ok=True)
for epoch in range(start_epoch, args.epochs):
    model.train()
    for x, y in loader:
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    scheduler.step()
    state = {
        "epoch": epoch,
        "state_dict": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        **({} if args.bug == "rng" else {"rng": torch.get_rng_state()}),
    }
    torch.save(state, os.path.join(args.output, f"checkpoint-{epoch}.pth.tar"))
