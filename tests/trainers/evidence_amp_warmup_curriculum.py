"""A mixed-precision loop with an EMA and a warmup that speaks the protocol by hand and declares no parts.

    python -B verify_resume.py --output runs/u --steps 8 --interrupt-at 4 \
        --train-cmd "python -B tests/trainers/evidence_amp_warmup_curriculum.py --bug scaler-not-saved"

Users' trainers rarely list their parts: its summary's meta has none, so the verifier knows only the standard set
(no GradScaler, no EMA). The same script runs unmodified under `verify --observe` with `--until {steps}` (the run's
length, whatever the checkpoint resumed) in place of the protocol's `--steps` (the updates of this process): it then
overwrites OUTPUT/checkpoint.pt after every update, as scripts do.

A float16 autocast forward pass scaled by a GradScaler that starts at 2**8 (an update that overflows backs the
scale off, and it grows every 2 clean updates), SGD with momentum, an lr warmup computed from the iteration counter
(no scheduler object), an EMA of the weights (`AveragedModel`, which no training forward pass uses), and a
curriculum flag kept as a Python attribute of the model, which doubles the target's weight once the loss fell.
Each bug loses one of them at the resume, the way users' code does:
- `scaler-not-saved`: the checkpoint has no GradScaler. True cause: the scaler.
- `ema-not-saved`: the checkpoint has no EMA. True cause: the ema.
- `ema-strict-false`: the EMA is saved, and loaded into its inner module with `strict=False`: no key matches and
  nothing is restored, silently. True cause: the ema.
- `warmup-counter`: the warmup reads the loop's own counter, which starts at 0 in every process. True cause: the
  progress counter (the lr alone differs; the optimizer's state is restored).
- `attribute`: the curriculum flag is not saved. True cause: state outside every state_dict, the Python attribute
  `model.hard`.
"""

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn

BUGS = ("scaler-not-saved", "ema-not-saved", "ema-strict-false", "warmup-counter", "attribute")
ROWS, BATCH, HIDDEN, LR, WARMUP = 16, 4, 16, 0.05, 6


def write(obj: Any, path: Path) -> None:
    """torch.save, then `sha256sum`'s line beside it (the protocol by hand)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(obj, path)
    path.with_name(path.name + ".sha256").write_text(f"{hashlib.sha256(path.read_bytes()).hexdigest()}  {path.name}\n")


def load(path: Path) -> Any:
    if hashlib.sha256(path.read_bytes()).hexdigest() != path.with_name(path.name + ".sha256").read_text().split()[0]:
        sys.exit(f"{path}: sha256 does not match; refusing to resume")
    return torch.load(path, map_location="cpu", weights_only=True)


def peek(generator: torch.Generator | None = None) -> list[float]:
    """The next three draws of a generator (torch's global one by default), not consumed."""
    get, put = (generator.get_state, generator.set_state) if generator else (torch.get_rng_state, torch.set_rng_state)
    saved = get()
    draws = torch.rand(3, generator=generator, dtype=torch.float64).tolist()
    put(saved)
    return draws


def plain(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.tolist()
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return {str(k): plain(v) for k, v in value.items()} if isinstance(value, dict) else value


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(2, HIDDEN), nn.Tanh(), nn.Dropout(0.1), nn.Linear(HIDDEN, 1))
        self.hard = False  # the curriculum: no state_dict holds it

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x) * (2.0 if self.hard else 1.0)


parser = argparse.ArgumentParser(description=__doc__, allow_abbrev=False)
parser.add_argument("--steps", type=int, help="updates to run in this process (the protocol)")
parser.add_argument("--until", type=int, help="the run's last update, counted from the start (a script's way)")
parser.add_argument("--output", type=Path, required=True)
parser.add_argument("--resume", type=Path)
parser.add_argument("--omit-rng-restore", action="store_true")
parser.add_argument("--omit", default="")
parser.add_argument("--bug", choices=BUGS)
args = parser.parse_args()
args.omit = []  # it declares no part, so no fault can be asked of it
torch.set_num_threads(1)
torch.manual_seed(0)

x = torch.linspace(-1, 1, 2 * ROWS).reshape(ROWS, 2)
y = 20.0 * (x[:, :1] - 2 * x[:, 1:] + 0.3 * torch.sin(3 * x[:, :1]))
model = Net()
optim = torch.optim.SGD(model.parameters(), lr=LR, momentum=0.9)
scaler = torch.amp.GradScaler("cpu", init_scale=2.0**8, growth_interval=2)
ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.8))
shuffle = torch.Generator().manual_seed(1)
perm, pos, step, history = None, ROWS, 0, []

if args.resume:
    ckpt = load(args.resume)
    model.load_state_dict(ckpt["model"])
    optim.load_state_dict(ckpt["optim"])
    if "scaler" in ckpt:
        scaler.load_state_dict(ckpt["scaler"])
    if args.bug == "ema-strict-false":
        ema.module.load_state_dict(ckpt["ema"], strict=False)  # keys "module.*" and "n_averaged": none matches
    elif "ema" in ckpt:
        ema.load_state_dict(ckpt["ema"])
    model.hard = ckpt.get("hard", False)
    perm, pos = ckpt["perm"], ckpt["pos"]
    shuffle.set_state(ckpt["shuffle_rng"])
    if not args.omit_rng_restore:
        torch.set_rng_state(ckpt["torch_rng"])
    step, history = ckpt["step"], ckpt["history"]


def save() -> None:
    ckpt = {"model": model.state_dict(), "optim": optim.state_dict(), "step": step, "history": history}
    ckpt |= {"perm": perm, "pos": pos, "shuffle_rng": shuffle.get_state(), "torch_rng": torch.get_rng_state()}
    if args.bug != "scaler-not-saved":
        ckpt["scaler"] = scaler.state_dict()
    if args.bug != "ema-not-saved":
        ckpt["ema"] = ema.state_dict()
    if args.bug != "attribute":
        ckpt["hard"] = model.hard
    write(ckpt, args.output / "checkpoint.pt")


updates = args.steps if args.steps is not None else args.until - step
for it in range(updates):
    counter = it if args.bug == "warmup-counter" else step  # the bug: this process's own count
    for group in optim.param_groups:
        group["lr"] = LR * min(1.0, (counter + 1) / WARMUP)
    if pos >= ROWS:
        perm, pos = torch.randperm(ROWS, generator=shuffle), 0
    rows = perm[pos : pos + BATCH]
    pos += BATCH
    optim.zero_grad()
    with torch.autocast("cpu", dtype=torch.float16):
        out = model(x[rows])
    loss = nn.functional.mse_loss(out.float(), y[rows])
    scaler.scale(loss).backward()
    scaler.step(optim)
    scaler.update()
    ema.update_parameters(model)
    model.hard = model.hard or loss.item() < 40.0
    step += 1
    history.append({"step": step, "rows": rows.tolist(), "lr": optim.param_groups[0]["lr"], "loss": loss.item()})
    if args.until is not None:  # a script keeps its last update's checkpoint, overwritten each time
        save()

save()
with torch.no_grad():
    mse = nn.functional.mse_loss(ema(x), y).item()
summary = {
    "protocol": "resume-protocol/1",
    "step": step,
    "history": history,
    "state": plain({"model": model.state_dict(), "optim": optim.state_dict(), "scaler": scaler.state_dict()})
    | {"pos": pos},
    "next": {"lr": optim.param_groups[0]["lr"], "rng": {"torch": peek(), "shuffle": peek(shuffle)}},
    "eval": {"mse": mse},
    "meta": {"omitted": []},  # no `parts`: the verifier knows only the standard set
}
args.output.mkdir(parents=True, exist_ok=True)
(args.output / "summary.json").write_text(json.dumps(summary))
