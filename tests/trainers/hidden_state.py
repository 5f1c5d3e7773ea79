"""A protocol trainer whose resume must bring back state that no state_dict holds and no summary reports: a gate's
call counter, the model's temperature, an EMA teacher kept beside the model, the loop's own counters read by its
schedules.

    python -B verify_resume.py --output runs/hidden --faults all \\
        --train-cmd "python -B tests/trainers/hidden_state.py --bug counter"

A float64 three-class spiral classifier (tests/trainers/_hidden.py): dropout (torch's global generator), a `gate`
faded in over its first 8 training calls (`model.gate.calls`), logits divided by an annealed temperature
(`model.temperature`), a loss that distils an EMA teacher (a plain `copy.deepcopy` of the student, moved toward it
after every update); Adam with two param groups and a LambdaLR of two lambdas: the body's a function of the loop's
global `global_step` (warm-up over 4 updates, then a decay), the head's a callable object of the loop's global
`seen` (examples so far); 8 rows an update in an order a NumPy Generator shuffles every epoch. The correct resume
saves all of it and sets it back: the counter and the temperature with the model, the two globals with the
scheduler. Parts: model, optimizer, scheduler, teacher, data, rng-numpy, rng-torch, progress; `--omit=PART` and
`--omit-rng-restore` as the protocol says (`--omit=teacher`: the teacher as built). The summary's `state` reports
the model, optimizer, scheduler, teacher and data, never the counter, the temperature or the globals.

`--bug NAME`, each silent, every part restored:
- `counter`: `model.gate.calls` is not set back. True cause: a submodule's int attribute outside the state_dict
  restarts at 0, so the gate fades in again.
- `temperature`: `model.temperature` is not set back. True cause: the root module's float attribute outside the
  state_dict restarts at 2.0, so the logits are divided by another temperature.
- `teacher-strict`: the teacher is loaded with `{"module." + key: ...}` and `strict=False`. True cause: no key
  matches, nothing is loaded, and the teacher stays as built.
- `teacher-renamed`: the teacher is saved under "ema" and looked for under "teacher". True cause: the resume falls
  back to a copy of the restored student, and the teacher's EMA is lost.
- `lr-global`: `global_step` is not set back. True cause: the body's lr_lambda reads the loop's global, not the
  epoch LambdaLR passes it; the scheduler's state is restored, and from the second resumed update the lr warms up
  again.
- `warmup-global`: `seen` is not set back. True cause: the head's lr_lambda, a callable object whose `__dict__`
  LambdaLR saves, reads the loop's global count of examples, so from the second resumed update the head's lr warms
  up again.
"""

import argparse

import _hidden
import numpy as np
import torch

from resumeproof import kit

PARTS = ("model", "optimizer", "scheduler", "teacher", "data", "rng-numpy", "rng-torch", "progress")
BATCH = 8
parser = argparse.ArgumentParser(description=__doc__, allow_abbrev=False)
kit.flags.add_arguments(parser, PARTS)
parser.add_argument("--bug", choices=_hidden.BUGS, help="Resume with this bug, without a word.")
own = parser.parse_args()
try:
    args = kit.flags.from_namespace(own, PARTS)
except kit.ResumeproofError as err:
    parser.error(str(err))
kit.refuse_existing(args.output)  # before any work, so that a refused run leaves nothing behind
kit.configure_torch()  # one thread, float64, deterministic algorithms

global_step = 0  # the loop's own count of updates: the body's schedule reads it
seen = 0  # the loop's own count of examples: the head's warm-up reads it


def body_lr(_epoch: int) -> float:
    """Warm-up over the first 4 updates, then a decay, by the loop's `global_step` (not the epoch given)."""
    return (global_step + 1) / 4 if global_step < 4 else 0.8 ** (global_step - 3)


class ExampleWarmup:
    """The head's factor: a warm-up over `examples` examples, then an inverse square root, by the loop's `seen`."""

    def __init__(self, examples: int) -> None:
        self.examples = examples  # what LambdaLR.state_dict saves of a callable object: its __dict__

    def __call__(self, _epoch: int) -> float:
        return min(1.0, (seen + BATCH) / self.examples) * (self.examples / max(seen, self.examples)) ** 0.5


x, y = _hidden.spiral()
torch.manual_seed(0)
model = _hidden.Net()
teacher = _hidden.teacher_of(model)
optimizer = torch.optim.Adam(model.param_groups(), lr=0.03)
scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, [body_lr, ExampleWarmup(48)])  # before any load
gens = kit.Generators(numpy=np.random.default_rng(0), torch=torch.default_generator)  # Dropout draws from torch's
order = kit.ShuffledOrder.fresh(_hidden.ROWS, gens["numpy"])
step, history = 0, []
TEACHER_KEY = "ema" if own.bug == "teacher-renamed" else "teacher"  # where the teacher is saved

if args.resume:
    state = kit.load_checkpoint(args.resume)  # its sha256 sidecar, then torch.load(weights_only=True)
    if "model" not in args.omit:
        model.load_state_dict(state["model"])
        if own.bug != "counter":  # the bug: the gate's counter starts again at 0
            model.gate.calls = state["gate_calls"]
        if own.bug != "temperature":  # the bug: the temperature starts again at 2.0
            model.temperature = state["temperature"]
    if "optimizer" not in args.omit:
        optimizer.load_state_dict(state["optimizer"])
    if "scheduler" not in args.omit:
        scheduler.load_state_dict(state["scheduler"])
        if own.bug != "lr-global":  # the bug: the body's schedule reads a count of 0
            global_step = state["global_step"]
        if own.bug != "warmup-global":  # the bug: the head's warm-up reads a count of 0
            seen = state["seen"]
    if "teacher" not in args.omit:
        if own.bug == "teacher-strict":  # the bug: no key matches, and strict=False says nothing
            teacher.load_state_dict({"module." + key: value for key, value in state["teacher"].items()}, strict=False)
        elif own.bug == "teacher-renamed":  # the bug: saved as "ema", so a copy of the student just restored
            teacher.load_state_dict(state.get("teacher", model.state_dict()))
        else:
            teacher.load_state_dict(state["teacher"])
    if "data" not in args.omit:
        order.load_state_dict(state["data"])
    if "progress" not in args.omit:
        step, history = state["step"], state["history"]
    gens.restore(state["rng"], args.restored_generators(gens.names))  # last: nothing may draw before the loop

for _ in range(args.steps):
    rows = order.take(BATCH, gens["numpy"])
    lr, head_lr = (group["lr"] for group in optimizer.param_groups)
    optimizer.zero_grad()
    logits = model(x[rows])
    with torch.no_grad():
        taught = teacher(x[rows])
    loss = _hidden.loss_of(logits, taught, y[rows])
    loss.backward()
    optimizer.step()
    global_step, seen = global_step + 1, seen + len(rows)
    scheduler.step()
    _hidden.follow(teacher, model)
    step += 1
    history.append(kit.record(step, rows, lr, loss.item(), head_lr=head_lr))

args.output.mkdir(parents=True)
state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict()}
state |= {"teacher": teacher.state_dict(), "data": order.state_dict()}
hidden = {"gate_calls": model.gate.calls, "temperature": model.temperature, "global_step": global_step, "seen": seen}
saved = {key: value for key, value in state.items() if key != "teacher"} | {TEACHER_KEY: state["teacher"]}
kit.save_checkpoint(
    args.output / "checkpoint.pt", saved | hidden | {"rng": gens.state(), "step": step, "history": history}
)
with torch.no_grad():  # evaluation draws nothing and anneals nothing: eval mode
    logits, taught = model.eval()(x), teacher(x)
kit.write_summary(
    args.output,
    step=step,
    history=history,
    state=state,  # the counter, the temperature and the globals are the bugs' point: no summary reports them
    next={"lr": optimizer.param_groups[0]["lr"], "head_lr": optimizer.param_groups[1]["lr"], "rng": gens.peek()},
    eval={
        "loss": torch.nn.functional.cross_entropy(logits, y).item(),
        "teacher_loss": torch.nn.functional.cross_entropy(taught, y).item(),
    },
    meta=args.meta() | {"bug": own.bug},
)
