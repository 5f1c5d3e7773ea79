"""Mixed precision on CPU: float16 autocast and torch.amp.GradScaler, whose scale backs off on overflow and grows back.

    python -B verify_resume.py --output runs/amp \
        --train-cmd "python -B tests/trainers/corpus_other/amp_scaler.py --bug scaler-not-saved"

No resumeproof (tests/trainers/corpus_other/_plain.py). The weights are float32, the forward pass runs in float16
under `torch.autocast("cpu")`, and the loss is scaled by a GradScaler that starts at 2**16: the first updates
overflow in float16 and are skipped while the scale backs off to 4096, then it grows every 3 clean updates and
backs off again at the next overflow. The scale is not logged per update; the summary reports the scaler's state.

Both bugs are self-correcting: the lost scaler state comes back by itself, and at the end of the resumed run the
scaler's state (scale and growth tracker) equals the continuous run's; only the updates it skipped in between, and
so the weights and losses, tell.
- `scaler-not-saved`: the checkpoint has no scaler; the resumed run starts again at 2**16 and skips its first four
  updates while the scale backs off (verified at the default 10 updates interrupted at 5).
- `scale-only`: the checkpoint keeps `scaler.get_scale()` and the resume builds `GradScaler(init_scale=scale)`: the
  growth tracker starts again at 0, so the scale grows two updates late and overflows at another update (verified
  at 12 updates interrupted at 6, where the tracker is 2).
True cause: `amp` for both. Parts: model, optimizer, amp, data (epoch position and the shuffling generator),
rng-torch (dropout).
"""

import _plain
import torch
from torch import nn

PARTS = ("model", "optimizer", "amp", "data", "rng-torch")
HPARAMS = {"rows": 16, "batch": 4, "hidden": 16, "lr": 0.05, "momentum": 0.9, "init_scale": 2.0**16, "growth": 3}

args = _plain.get_args(__doc__, PARTS, bugs=("scaler-not-saved", "scale-only"))
torch.set_num_threads(1)
torch.manual_seed(0)

n = HPARAMS["rows"]
x = torch.linspace(-1, 1, 2 * n).reshape(n, 2)
y = 20.0 * (x[:, :1] - 2 * x[:, 1:] + 0.3 * torch.sin(3 * x[:, :1]))
model = nn.Sequential(nn.Linear(2, HPARAMS["hidden"]), nn.Tanh(), nn.Dropout(0.1), nn.Linear(HPARAMS["hidden"], 1))
optim = torch.optim.SGD(model.parameters(), lr=HPARAMS["lr"], momentum=HPARAMS["momentum"])
scaler = torch.amp.GradScaler("cpu", init_scale=HPARAMS["init_scale"], growth_interval=HPARAMS["growth"])
shuffle = torch.Generator().manual_seed(1)
perm, pos = None, n  # the epoch's permutation and the position in it
step, history = 0, []

if args.resume:
    ckpt = _plain.load(args.resume)
    if _plain.restore(args, "model"):
        model.load_state_dict(ckpt["model"])
    if _plain.restore(args, "optimizer"):
        optim.load_state_dict(ckpt["optim"])
    if _plain.restore(args, "amp"):
        if args.bug == "scale-only":
            scaler = torch.amp.GradScaler("cpu", init_scale=ckpt["loss_scale"], growth_interval=HPARAMS["growth"])
        elif args.bug is None:
            scaler.load_state_dict(ckpt["scaler"])
    if _plain.restore(args, "data"):
        perm, pos = ckpt["perm"], ckpt["pos"]
        shuffle.set_state(ckpt["shuffle_rng"])
    if _plain.restore(args, "rng-torch"):
        torch.set_rng_state(ckpt["torch_rng"])
    step, history = ckpt["step"], ckpt["history"]


def train_step(xb, yb) -> float:
    optim.zero_grad()
    with torch.autocast("cpu", dtype=torch.float16):
        out = model(xb)
    loss = nn.functional.mse_loss(out.float(), yb)
    scaler.scale(loss).backward()
    scaler.step(optim)  # skipped when a gradient overflowed
    scaler.update()
    return loss.item()


for _ in range(args.steps):
    if pos >= n:
        perm, pos = torch.randperm(n, generator=shuffle), 0
    rows = perm[pos : pos + HPARAMS["batch"]]
    pos += HPARAMS["batch"]
    lr = optim.param_groups[0]["lr"]
    loss = train_step(x[rows], y[rows])
    step += 1
    history.append({"step": step, "rows": rows.tolist(), "lr": lr, "loss": loss})

ckpt = {"model": model.state_dict(), "optim": optim.state_dict(), "step": step, "history": history}
if args.bug is None:
    ckpt["scaler"] = scaler.state_dict()
elif args.bug == "scale-only":
    ckpt["loss_scale"] = scaler.get_scale()
ckpt |= {"perm": perm, "pos": pos, "shuffle_rng": shuffle.get_state(), "torch_rng": torch.get_rng_state()}
_plain.save(ckpt, args.output / "checkpoint.pt")
model.eval()
with torch.no_grad():
    mse = nn.functional.mse_loss(model(x), y).item()
_plain.write_summary(
    args,
    PARTS,
    step=step,
    history=history,
    state={"model": model.state_dict(), "optim": optim.state_dict(), "scaler": scaler.state_dict(), "pos": pos},
    next={"lr": optim.param_groups[0]["lr"], "rng": {"torch": _plain.peek(), "shuffle": _plain.peek(shuffle)}},
    eval={"mse": mse},
)
