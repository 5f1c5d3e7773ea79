"""A long run's plain loop as users write it, for `resumeproof watch` (tests/e2e/test_watch.py): it resumes by itself
from the newest checkpoint in its folder, saves every --every updates (atomically) and, on SIGTERM, once more at
the end of the update in progress, then exits: the preemption path.

Each batch is drawn from torch's global generator before the forward pass, and dropout draws during it: a restore
must set the generator, and the run draws from it again before its first update. `--sigterm-drops PART` is the bug
CI never sees: a resume from a checkpoint the SIGTERM handler wrote leaves PART (optimizer, scheduler, rng) as
built. `--data epochs` feeds it a fixed dataset in epochs of 8 batches, shuffled by the epoch's own seed, its
position in the epoch saved; `--forgets-position` is the other bug, on every path: a resume starts its epoch over.
`--die-after M` SIGKILLs itself after update M; `--term-after M` SIGTERMs itself after update M; `--pace S`
sleeps S seconds after each update (a job a test preempts).

    python -B watched_loop.py --out DIR --steps 12 --every 2 [--sigterm-drops optimizer] [--term-after 5]
"""

import argparse
import os
import signal
import time
from pathlib import Path

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--out", type=Path, required=True)
parser.add_argument("--steps", type=int, default=12)
parser.add_argument("--every", type=int, default=2)
parser.add_argument("--sigterm-drops", choices=("optimizer", "scheduler", "rng"))
parser.add_argument("--data", choices=("draws", "epochs"), default="draws")
parser.add_argument("--forgets-position", action="store_true")
parser.add_argument("--die-after", type=int)
parser.add_argument("--term-after", type=int)
parser.add_argument("--width", type=int, default=16)
parser.add_argument("--pace", type=float, default=0.0, help="seconds slept after each update (a job to preempt)")
args = parser.parse_args()
args.out.mkdir(parents=True, exist_ok=True)
checkpoint = args.out / "ckpt.pt"

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, args.width), torch.nn.Dropout(0.1), torch.nn.Linear(args.width, 1))
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=3, gamma=0.5)
step, stopping = 0, False
BATCH, PER_EPOCH = 8, 8
dataset = torch.randn(BATCH * PER_EPOCH, 4, generator=torch.Generator().manual_seed(1))
position = 0  # batches of the current epoch already trained on (--data epochs)


def batch() -> torch.Tensor:
    """The next batch: drawn from the global generator, or the dataset's next one in its epoch's shuffled order."""
    if args.data == "draws":
        return torch.randn(BATCH, 4)
    order = torch.randperm(len(dataset), generator=torch.Generator().manual_seed(step // PER_EPOCH))
    return dataset[order[position * BATCH : (position + 1) * BATCH]]


def stop(signum, frame):
    global stopping
    stopping = True


signal.signal(signal.SIGTERM, stop)


def save(by_signal: bool) -> None:
    state = {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        "rng": torch.get_rng_state(),
        "step": step,
        "position": position,
        "by_signal": by_signal,
    }
    torch.save(state, args.out / "ckpt.tmp")
    os.replace(args.out / "ckpt.tmp", checkpoint)


if checkpoint.exists():
    state = torch.load(checkpoint, weights_only=True)
    dropped = args.sigterm_drops if state["by_signal"] else None
    model.load_state_dict(state["model"])
    if dropped != "optimizer":
        optimizer.load_state_dict(state["optimizer"])
    if dropped != "scheduler":
        scheduler.load_state_dict(state["scheduler"])
    if dropped != "rng":
        torch.set_rng_state(state["rng"])
    step = state["step"]
    position = 0 if args.forgets_position else state["position"]

while step < args.steps:
    x = batch()
    loss = (model(x) - x.sum(dim=1, keepdim=True)).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    scheduler.step()
    step += 1
    position = (position + 1) % PER_EPOCH
    with (args.out / "loss.txt").open("a") as log:
        log.write(f"{step} {loss.item():.17g}\n")
    time.sleep(args.pace)
    if stopping:
        save(by_signal=True)
        raise SystemExit(0)
    if step % args.every == 0:
        save(by_signal=False)
    if step == args.die_after:
        os.kill(os.getpid(), signal.SIGKILL)
    if step == args.term_after:
        os.kill(os.getpid(), signal.SIGTERM)
