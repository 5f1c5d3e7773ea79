"""A kit trainer whose learning rate alone goes wrong at the resume: the optimizer's state is restored, so the
diagnosis must name the schedule or the counter it is computed from, never the optimizer.

    python -B verify_resume.py --output runs/schedule --steps 8 --interrupt-at 4 \
        --train-cmd "python -B tests/trainers/evidence_schedule.py --bug warmup-counter"

float64 regression, Adam, dropout from torch's global generator, a NumPy-shuffled data order, a linear warmup over 6
updates: computed by hand from the update count (no scheduler object), or with `--scheduler` by a LambdaLR.
Bugs: `warmup-counter` (the warmup reads the loop's own index, which starts at 0 in every process: true cause the
progress counter), `scheduler-after-load` (with a LambdaLR made after `optimizer.load_state_dict`: its constructor
multiplies the restored lr by the warmup's first factor, and its own load_state_dict does not set it back: true
cause the scheduler). It declares no parts: the verifier knows the standard set.
"""

import numpy as np
import torch
from _protocol_files import parser

from resumeproof import kit

cli = parser()
cli.add_argument("--scheduler", action="store_true", help="a LambdaLR computes the warmup")
cli.add_argument("--bug", choices=("warmup-counter", "scheduler-after-load"))
args = cli.parse_args()
kit.refuse_existing(args.output)
kit.configure_torch(dtype=torch.float64)
WARMUP, LR = 6, 0.05


def warmup(done: int) -> float:
    return min(1.0, (done + 1) / WARMUP)


torch.manual_seed(0)
x = torch.linspace(-1, 1, 32).reshape(16, 2)
y = x[:, :1] - 2 * x[:, 1:] + 0.3 * torch.sin(3 * x[:, :1])
model = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.Tanh(), torch.nn.Dropout(0.2), torch.nn.Linear(8, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=LR)
late = args.bug == "scheduler-after-load"
schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, warmup) if args.scheduler and not late else None
gens = kit.Generators(numpy=np.random.default_rng(0), torch=torch.default_generator)
order = kit.ShuffledOrder.fresh(16, gens["numpy"])
step, history = 0, []

if args.resume:
    ckpt = kit.load_checkpoint(args.resume)
    model.load_state_dict(ckpt["model"])
    optimizer.load_state_dict(ckpt["optimizer"])
    order.load_state_dict(ckpt["data"])
    if late:  # the scheduler made after the load: its constructor rewrites the restored lr
        schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, warmup)
    if schedule is not None:
        schedule.load_state_dict(ckpt["scheduler"])
    step, history = ckpt["step"], ckpt["history"]
    if not args.omit_rng_restore:
        gens.restore(ckpt["rng"], gens.names)
elif late:
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, warmup)

for i in range(args.steps):
    if schedule is None:
        for group in optimizer.param_groups:
            group["lr"] = LR * warmup(i if args.bug == "warmup-counter" else step)
    rows = order.take(4, gens["numpy"])
    lr = optimizer.param_groups[0]["lr"]
    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x[rows]), y[rows])
    loss.backward()
    optimizer.step()
    if schedule is not None:
        schedule.step()
    step += 1
    history.append(kit.record(step, rows, lr, loss.item()))

args.output.mkdir(parents=True)
state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "data": order.state_dict()}
state |= {} if schedule is None else {"scheduler": schedule.state_dict()}
kit.save_checkpoint(args.output / "checkpoint.pt", state | {"rng": gens.state(), "step": step, "history": history})
kit.write_summary(
    args.output,
    step=step,
    history=history,
    state={"model": model.state_dict(), "optimizer": optimizer.state_dict()},
    next={"lr": optimizer.param_groups[0]["lr"], "rng": gens.peek()},
    eval={"mse": torch.nn.functional.mse_loss(model.eval()(x), y).item()},
    meta={},
)
