"""A kit trainer with gradient accumulation whose micro-batch count per update goes wrong at the resume: the
diagnosis must name the progress counter (the backward passes per update differ), not a generator or the optimizer.

    python -B verify_resume.py --output runs/accum --steps 6 --interrupt-at 3 \
        --train-cmd "python -B tests/trainers/evidence_accumulation.py --bug micro-from-updates"

float64 regression, SGD with momentum, dropout from torch's global generator, a NumPy-shuffled data order of
micro-batches of 2 rows. The first 2 updates accumulate 1 micro-batch, the later ones 2. Bugs:
`micro-from-updates` (the micro-step counter is restored from the update count, not updates' micro-batches: the
resumed update steps after the wrong number of them), `warmup-from-loop` (the accumulation warm-up reads the
process's own update index, which restarts at 0). True cause for both: the progress counter.
"""

import numpy as np
import torch
from _protocol_files import parser

from resumeproof import kit

cli = parser()
cli.add_argument("--bug", choices=("micro-from-updates", "warmup-from-loop"))
args = cli.parse_args()
kit.refuse_existing(args.output)
kit.configure_torch(dtype=torch.float64)


def accumulated(update: int) -> int:
    """Micro-batches in update `update + 1`: 1 during a 2-update warm-up, then 2."""
    return 1 if update < 2 else 2


torch.manual_seed(0)
x = torch.linspace(-1, 1, 32).reshape(16, 2)
y = x[:, :1] - 2 * x[:, 1:] + 0.3 * torch.sin(3 * x[:, :1])
model = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.Tanh(), torch.nn.Dropout(0.2), torch.nn.Linear(8, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
gens = kit.Generators(numpy=np.random.default_rng(0), torch=torch.default_generator)
order = kit.ShuffledOrder.fresh(16, gens["numpy"])
step, micro, history = 0, 0, []  # micro: micro-batches since the start of the run

if args.resume:
    ckpt = kit.load_checkpoint(args.resume)
    model.load_state_dict(ckpt["model"])
    optimizer.load_state_dict(ckpt["optimizer"])
    order.load_state_dict(ckpt["data"])
    step, history = ckpt["step"], ckpt["history"]
    micro = step if args.bug == "micro-from-updates" else ckpt["micro"]
    if not args.omit_rng_restore:
        gens.restore(ckpt["rng"], gens.names)

done, pending = 0, 0  # updates this process ran; micro-batches accumulated in the update in progress
while done < args.steps:
    if pending == 0:
        optimizer.zero_grad()
    rows = order.take(2, gens["numpy"])
    loss = torch.nn.functional.mse_loss(model(x[rows]), y[rows])
    loss.backward()
    micro, pending = micro + 1, pending + 1
    need = accumulated(done if args.bug == "warmup-from-loop" else step)
    # the bug's boundary: after the warm-up, every second micro-batch of the run, as counted by `micro`
    every_second = micro % 2 == 0 or step < 2
    if not (every_second if args.bug == "micro-from-updates" else pending == need):
        continue
    optimizer.step()
    step, done, pending = step + 1, done + 1, 0
    history.append(kit.record(step, rows, optimizer.param_groups[0]["lr"], loss.item()))

args.output.mkdir(parents=True)
state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "data": order.state_dict()}
saved = state | {"micro": micro, "rng": gens.state(), "step": step, "history": history}
kit.save_checkpoint(args.output / "checkpoint.pt", saved)
kit.write_summary(
    args.output,
    step=step,
    history=history,
    state={"model": model.state_dict(), "optimizer": optimizer.state_dict()},
    next={"lr": optimizer.param_groups[0]["lr"], "rng": gens.peek()},
    eval={"mse": torch.nn.functional.mse_loss(model.eval()(x), y).item()},
    meta={},
)
