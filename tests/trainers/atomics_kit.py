"""A protocol trainer whose gradients are summed in a run-dependent order, as a GPU's atomics sum them: it differs
from itself in the last bits from some update on, and its resume may still be exact (or lose a part).

    python -B verify_resume.py --output runs/atomics --atol 0 --faults all \\
        --train-cmd "python -B tests/trainers/atomics_kit.py --ordered"

A float32 2 -> 16 -> 1 net with dropout (torch's generator) whose layers' backward passes sum the examples'
gradients in an order the OS draws (tests/trainers/_atomics.py), a shuffled data order (a NumPy Generator), Adam, a
per-update StepLR, an enabled CPU GradScaler whose scale doubles every two clean updates until one overflows (that
update skipped, the scale halved: `history[].scale`, `state.scaler`), and an EMA of the weights (AveragedModel,
`state.ema`). Parts: model, optimizer, scheduler, scaler, ema, data, rng-numpy, rng-torch, progress; `--omit=PART`
and `--omit-rng-restore` as the protocol says. Without `--ordered` two runs differ by ~1e-7 (relative) in their
losses from about update 2 on: `--atol 0` finds it not deterministic.

Flags of its own:
- `--ordered`: sum the gradients in the examples' order: the trainer is then exactly deterministic.
- `--bug PART` (optimizer, scheduler, scaler, ema, rng, data): the resume silently loses PART, which it declares
  and does not omit: the optimizer's state not loaded, the scheduler built again after the optimizer's load, the
  GradScaler left fresh, the EMA started again from the restored weights, the generators not restored, the data
  order started again from its first batch.
"""

import argparse

import _atomics
import numpy as np
import torch
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn

from resumeproof import kit

PARTS = ("model", "optimizer", "scheduler", "scaler", "ema", "data", "rng-numpy", "rng-torch", "progress")
ROWS, BATCH = 32, 8
parser = argparse.ArgumentParser(description=__doc__, allow_abbrev=False)
kit.flags.add_arguments(parser, PARTS)
parser.add_argument("--ordered", action="store_true", help="Sum the gradients in a fixed order: exactly deterministic.")
parser.add_argument("--bug", choices=_atomics.BUGS, help="Lose this part on the resume, without a word.")
own = parser.parse_args()
try:
    args = kit.flags.from_namespace(own, PARTS)
except kit.ResumeproofError as err:
    parser.error(str(err))
kit.refuse_existing(args.output)  # before any work, so that a refused run leaves nothing behind
kit.configure_torch(dtype=torch.float32)

torch.manual_seed(0)
x = torch.linspace(-1, 1, 2 * ROWS).reshape(ROWS, 2)
y = x[:, :1] - 2 * x[:, 1:] + 0.3 * torch.sin(3 * x[:, :1])
model = torch.nn.Sequential(
    _atomics.Linear(2, 16, ordered=own.ordered),
    torch.nn.Tanh(),
    torch.nn.Dropout(0.2),
    _atomics.Linear(16, 1, ordered=own.ordered),
)
optimizer = torch.optim.Adam(model.parameters(), lr=0.02)


def schedule(optimizer: torch.optim.Optimizer) -> torch.optim.lr_scheduler.StepLR:
    return torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.7)


scheduler = schedule(optimizer)  # before optimizer.load_state_dict(): its constructor writes the initial lr
# The scale grows into overflows (fp16's range, _atomics.py), which skip the update and halve it: the scaler's
# state decides which updates are skipped.
scaler = torch.amp.GradScaler("cpu", init_scale=2.0**16, growth_interval=2)
ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.9))
gens = kit.Generators(numpy=np.random.default_rng(0), torch=torch.default_generator)  # Dropout draws from torch's
order = kit.ShuffledOrder.fresh(ROWS, gens["numpy"])
step, history = 0, []

if args.resume:
    state = kit.load_checkpoint(args.resume)  # its sha256 sidecar, then torch.load(weights_only=True)
    restored = {part for part in ("model", "optimizer", "scheduler", "scaler", "ema", "data") if part not in args.omit}
    if "model" in restored:
        model.load_state_dict(state["model"])
    if "optimizer" in restored and own.bug != "optimizer":  # the bug: fresh Adam moments and counters
        optimizer.load_state_dict(state["optimizer"])
    if own.bug == "scheduler":  # the bug: built again after the optimizer's load, its step count back to 0
        scheduler = schedule(optimizer)
    elif "scheduler" in restored:
        scheduler.load_state_dict(state["scheduler"])
    if "scaler" in restored and own.bug != "scaler":  # the bug: the initial scale and growth tracker
        scaler.load_state_dict(state["scaler"])
    if own.bug == "ema":  # the bug: a fresh average of the weights just restored
        ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.9))
    elif "ema" in restored:
        ema.load_state_dict(state["ema"])
    if "data" in restored and own.bug != "data":  # the bug: the epoch starts again from its first batch
        order.load_state_dict(state["data"])
    if "progress" not in args.omit:
        step, history = state["step"], state["history"]
    if own.bug != "rng":  # the bug: the generators go on from where building the run left them
        gens.restore(state["rng"], args.restored_generators(gens.names))  # last: nothing may draw before the loop

for _ in range(args.steps):
    rows = order.take(BATCH, gens["numpy"])
    lr, scale = optimizer.param_groups[0]["lr"], scaler.get_scale()
    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x[rows]), y[rows])
    scaler.scale(loss).backward()  # the scale is a power of two: scaling and unscaling are exact
    scaler.step(optimizer)
    scaler.update()
    scheduler.step()
    ema.update_parameters(model)
    step += 1
    history.append(kit.record(step, rows, lr, loss.item(), scale=scale))

args.output.mkdir(parents=True)
state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict()}
state |= {"scaler": scaler.state_dict(), "ema": ema.state_dict(), "data": order.state_dict()}
kit.save_checkpoint(args.output / "checkpoint.pt", state | {"rng": gens.state(), "step": step, "history": history})
with torch.no_grad():  # evaluation draws nothing: no dropout mask
    mse, ema_mse = (torch.nn.functional.mse_loss(net.eval()(x), y).item() for net in (model, ema))
kit.write_summary(
    args.output,
    step=step,
    history=history,
    state=state,
    next={"lr": optimizer.param_groups[0]["lr"], "rng": gens.peek()},
    eval={"mse": mse, "ema_mse": ema_mse},
    meta=args.meta() | {"ordered": own.ordered, "bug": own.bug},
)
