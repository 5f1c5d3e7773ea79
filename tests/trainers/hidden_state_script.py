"""A distillation script in nanoGPT's style, written with no thought of resumeproof, whose resume must bring back
state that no state_dict holds: a gate's call counter, the model's temperature, an EMA teacher kept beside the
model, the loop's own counters read by its schedules. `resumeproof verify --observe` verifies it.

    resumeproof verify --observe --output runs/hidden-script \\
      --train-cmd  "python -B tests/trainers/hidden_state_script.py --iters {steps} --out {run} --bug counter" \\
      --resume-cmd "python -B tests/trainers/hidden_state_script.py --iters {steps} --out {run} \\
                    --resume {checkpoint} --bug counter" \\
      --checkpoint "{run}/ckpt_{step}.pt"

Float64 (tests/trainers/_hidden.py): a three-class spiral classifier with dropout (torch's global generator), a
`gate` faded in over its first 8 training calls (`model.gate.calls`), logits divided by an annealed temperature
(`model.temperature`), a loss that distils an EMA teacher (a plain `copy.deepcopy` of the student, moved toward it
after every iteration, called as `teacher(x)` under no_grad); Adam with two param groups and a LambdaLR of two
lambdas: the body's a function of the global `global_step` (warm-up over 4 optimizer steps, then a decay), the
head's a callable object of the global `seen` (examples so far); batches of 8 from a per-epoch permutation that a
NumPy Generator of its own draws. It writes `{out}/ckpt_{iter}.pt` after every iteration (model, optimizer,
scheduler, teacher, iter, the gate's counter, the temperature, both globals, the epoch's permutation and cursor,
both generators) and resumes all of it, the generators last.

Flags: `--iters N`, `--out DIR`, `--resume CKPT`, and `--bug NAME`, each silent:
- `counter`: `model.gate.calls` is not set back. True cause: a submodule's int attribute outside the state_dict
  restarts at 0, so the gate fades in again.
- `temperature`: `model.temperature` is not set back. True cause: the root module's float attribute outside the
  state_dict restarts at 2.0, so the logits are divided by another temperature.
- `teacher-strict`: the teacher is loaded with `{"module." + key: ...}` and `strict=False`. True cause: no key
  matches, nothing is loaded, and the teacher stays as built.
- `teacher-renamed`: the teacher is saved under "ema" and looked for under "teacher". True cause: the resume falls
  back to a copy of the restored student, and the teacher's EMA is lost.
- `lr-global`: `global_step` is not set back. True cause: the body's lr_lambda reads the loop's global, not the
  epoch LambdaLR passes it; the scheduler's state is restored, and from the second resumed iteration the lr warms
  up again.
- `warmup-global`: `seen` is not set back. True cause: the head's lr_lambda, a callable object whose `__dict__`
  LambdaLR saves, reads the loop's global count of examples, so from the second resumed iteration the head's lr
  warms up again.
"""

import argparse
import os

import _hidden
import numpy as np
import torch

p = argparse.ArgumentParser(description="Distil an EMA teacher into a toy classifier; checkpoint every iteration.")
p.add_argument("--iters", type=int, default=10, help="iterations in all")
p.add_argument("--out", required=True, help="where ckpt_{iter}.pt goes")
p.add_argument("--resume", default=None, help="a ckpt_*.pt to resume from")
p.add_argument("--bug", choices=_hidden.BUGS, help="resume with this bug")
args = p.parse_args()

torch.set_num_threads(1)
torch.set_default_dtype(torch.float64)
torch.manual_seed(1337)
os.makedirs(args.out, exist_ok=True)
batch_size, learning_rate = 8, 0.03
teacher_key = "ema" if args.bug == "teacher-renamed" else "teacher"  # where the teacher is saved

global_step = 0  # optimizer steps so far: the body's schedule reads it
seen = 0  # examples so far: the head's warm-up reads it


def body_lr(_epoch: int) -> float:  # warm-up over 4 steps, then a decay
    return (global_step + 1) / 4 if global_step < 4 else 0.8 ** (global_step - 3)


class ExampleWarmup:  # warm-up over `examples` examples, then an inverse square root
    def __init__(self, examples: int) -> None:
        self.examples = examples

    def __call__(self, _epoch: int) -> float:
        return min(1.0, (seen + batch_size) / self.examples) * (self.examples / max(seen, self.examples)) ** 0.5


data, targets = _hidden.spiral()
shuffle = np.random.default_rng(1337)  # the data order's own generator
perm, cursor = shuffle.permutation(len(data)), 0


def get_batch() -> tuple[torch.Tensor, torch.Tensor]:
    global perm, cursor
    if cursor == len(perm):  # a new epoch
        perm, cursor = shuffle.permutation(len(data)), 0
    ix = torch.from_numpy(perm[cursor : cursor + batch_size])
    cursor += batch_size
    return data[ix], targets[ix]


model = _hidden.Net()
teacher = _hidden.teacher_of(model)
optimizer = torch.optim.Adam(model.param_groups(), lr=learning_rate)
scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, [body_lr, ExampleWarmup(48)])

iter_num = 0
if args.resume:
    checkpoint = torch.load(args.resume, map_location="cpu", weights_only=True)
    model.load_state_dict(checkpoint["model"])
    if args.bug != "counter":
        model.gate.calls = checkpoint["gate_calls"]
    if args.bug != "temperature":
        model.temperature = checkpoint["temperature"]
    optimizer.load_state_dict(checkpoint["optimizer"])
    scheduler.load_state_dict(checkpoint["scheduler"])
    if args.bug != "lr-global":
        global_step = checkpoint["global_step"]
    if args.bug != "warmup-global":
        seen = checkpoint["seen"]
    if args.bug == "teacher-strict":  # as if the teacher had been saved wrapped
        teacher.load_state_dict({"module." + k: v for k, v in checkpoint["teacher"].items()}, strict=False)
    else:  # a checkpoint without a teacher (an older one, or one saved as "ema"): start it from the student
        teacher.load_state_dict(checkpoint.get("teacher", model.state_dict()))
    perm, cursor = checkpoint["perm"].numpy(), checkpoint["cursor"]
    iter_num = checkpoint["iter"]
    torch.set_rng_state(checkpoint["rng"]["torch"])  # last: nothing may draw before the first iteration
    shuffle.bit_generator.state = checkpoint["rng"]["numpy"]

model.train()
while iter_num < args.iters:
    x, y = get_batch()
    logits = model(x)
    with torch.no_grad():
        taught = teacher(x)
    loss = _hidden.loss_of(logits, taught, y)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    global_step += 1
    seen += len(x)
    scheduler.step()
    _hidden.follow(teacher, model)
    iter_num += 1
    checkpoint = {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        teacher_key: teacher.state_dict(),
        "iter": iter_num,
        "gate_calls": model.gate.calls,
        "temperature": model.temperature,
        "global_step": global_step,
        "seen": seen,
        "perm": torch.from_numpy(perm),
        "cursor": cursor,
        "rng": {"torch": torch.get_rng_state(), "numpy": shuffle.bit_generator.state},
    }
    torch.save(checkpoint, os.path.join(args.out, f"ckpt_{iter_num}.pt"))
    print(f"iter {iter_num}: loss {loss.item():.9g}, lr {scheduler.get_last_lr()}")
