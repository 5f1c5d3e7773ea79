"""A mean teacher: torch.optim.swa_utils.AveragedModel keeps an EMA of the student, whose outputs it regresses to.

    python -B verify_resume.py --output runs/teacher \
        --train-cmd "python -B tests/trainers/corpus/swa_teacher.py --bug lose-n-averaged"

The loss is the task loss plus a consistency term towards the teacher's (eval-mode) outputs, so
the teacher shapes every update. `AveragedModel`'s state_dict holds the averaged weights under
`module.` and the buffer `n_averaged`: while it is 0, `update_parameters` copies the student
instead of averaging.

Bugs: `lose-teacher` saves no teacher (the resume averages from a freshly built one);
`lose-n-averaged` saves `teacher.module.state_dict()`, the weights without `n_averaged`, so the
first update after the resume overwrites the teacher with the student. True cause: `teacher`
for both. Parts (this trainer calls its model the student): student, teacher, optimizer, data,
rng-numpy, rng-torch.
"""

import _corpus
import numpy as np
import torch
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn

from resumeproof import kit

PARTS = ("student", "teacher", "optimizer", "data", "rng-numpy", "rng-torch")
args, flags = _corpus.parse(PARTS, __doc__, bugs=("lose-teacher", "lose-n-averaged"))
kit.configure_torch()

torch.manual_seed(0)
x, y = _corpus.regression(16)
student = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.Tanh(), torch.nn.Dropout(0.2), torch.nn.Linear(8, 1))
teacher = AveragedModel(student, multi_avg_fn=get_ema_multi_avg_fn(0.9)).eval()
optimizer = torch.optim.Adam(student.parameters(), lr=0.05)
gens = kit.Generators(numpy=np.random.default_rng(0), torch=torch.default_generator)
order = kit.ShuffledOrder.fresh(16, gens["numpy"])
step, history = 0, []

if args.resume:
    ckpt = kit.load_checkpoint(args.resume)
    if "student" not in args.omit:
        student.load_state_dict(ckpt["student"])
    if "teacher" not in args.omit and flags.bug is None:
        teacher.load_state_dict(ckpt["teacher"])
    elif "teacher" not in args.omit and flags.bug == "lose-n-averaged":
        teacher.module.load_state_dict(ckpt["teacher"])
    if "optimizer" not in args.omit:
        optimizer.load_state_dict(ckpt["optimizer"])
    if "data" not in args.omit:
        order.load_state_dict(ckpt["data"])
    step, history = ckpt["step"], ckpt["history"]
    gens.restore(ckpt["rng"], [n for n in gens.names if f"rng-{n}" not in args.omit])

for _ in range(args.steps):
    rows = order.take(4, gens["numpy"])
    lr = optimizer.param_groups[0]["lr"]
    optimizer.zero_grad()
    out = student(x[rows])
    with torch.no_grad():
        target = teacher(x[rows])
    loss = torch.nn.functional.mse_loss(out, y[rows]) + 0.5 * torch.nn.functional.mse_loss(out, target)
    loss.backward()
    optimizer.step()
    teacher.update_parameters(student)
    step += 1
    history.append(kit.record(step, rows, lr, loss.item()))

args.output.mkdir(parents=True)
ckpt = {"student": student.state_dict(), "optimizer": optimizer.state_dict(), "data": order.state_dict()}
if flags.bug is None:
    ckpt["teacher"] = teacher.state_dict()
elif flags.bug == "lose-n-averaged":
    ckpt["teacher"] = teacher.module.state_dict()
kit.save_checkpoint(args.output / "checkpoint.pt", ckpt | {"rng": gens.state(), "step": step, "history": history})
kit.write_summary(
    args.output,
    step=step,
    history=history,
    state={"student": student.state_dict(), "teacher": teacher.state_dict(), "optimizer": optimizer.state_dict()},
    next={"lr": optimizer.param_groups[0]["lr"], "rng": gens.peek()},
    eval={
        "student_mse": torch.nn.functional.mse_loss(student.eval()(x), y).item(),
        "teacher_mse": torch.nn.functional.mse_loss(teacher(x), y).item(),
    },
    meta=_corpus.meta(args, PARTS),
)
