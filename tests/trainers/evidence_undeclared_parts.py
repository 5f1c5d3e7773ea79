"""A kit trainer that declares no parts (no meta.parts): the diagnosis must still name the GradScaler or the EMA
it lost, by the protocol's names (`scaler`, `ema`), from the observer's records.

    python -B verify_resume.py --output runs/undeclared \
        --train-cmd "python -B tests/trainers/evidence_undeclared_parts.py --bug lose-ema"

float64 regression, Adam, a CPU GradScaler whose scale grows every two updates (the scale is a power of two and
nothing overflows, so only the scaler's own state shows a lost scaler), an EMA of the weights
(`torch.optim.swa_utils.AveragedModel`), dropout from torch's global generator, a NumPy-shuffled data order.
Bugs: `lose-scaler` (the scaler is not saved), `lose-ema` (the EMA is not saved), `ema-strict-false` (the EMA is
loaded with `load_state_dict(strict=False)` under keys that match nothing, so nothing is loaded). Without --bug
the resume is correct.
"""

import numpy as np
import torch
from _protocol_files import parser
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn

from resumeproof import kit

cli = parser()
cli.add_argument("--bug", choices=("lose-scaler", "lose-ema", "ema-strict-false"))
args = cli.parse_args()
kit.refuse_existing(args.output)
kit.configure_torch(dtype=torch.float64)

torch.manual_seed(0)
x = torch.linspace(-1, 1, 32).reshape(16, 2)
y = x[:, :1] - 2 * x[:, 1:] + 0.3 * torch.sin(3 * x[:, :1])
model = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.Tanh(), torch.nn.Dropout(0.2), torch.nn.Linear(8, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
scaler = torch.amp.GradScaler("cpu", init_scale=2.0**6, growth_interval=2)
ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.9))
gens = kit.Generators(numpy=np.random.default_rng(0), torch=torch.default_generator)
order = kit.ShuffledOrder.fresh(16, gens["numpy"])
step, history = 0, []

if args.resume:
    ckpt = kit.load_checkpoint(args.resume)
    model.load_state_dict(ckpt["model"])
    optimizer.load_state_dict(ckpt["optimizer"])
    order.load_state_dict(ckpt["data"])
    if args.bug != "lose-scaler":
        scaler.load_state_dict(ckpt["scaler"])
    if args.bug == "ema-strict-false":  # the EMA saved under another prefix: strict=False loads none of it
        ema.load_state_dict({f"ema.{k}": v for k, v in ckpt["ema"].items()}, strict=False)
    elif args.bug != "lose-ema":
        ema.load_state_dict(ckpt["ema"])
    step, history = ckpt["step"], ckpt["history"]
    if not args.omit_rng_restore:
        gens.restore(ckpt["rng"], gens.names)

for _ in range(args.steps):
    rows = order.take(4, gens["numpy"])
    lr, scale = optimizer.param_groups[0]["lr"], scaler.get_scale()
    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x[rows]), y[rows])
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    ema.update_parameters(model)
    step += 1
    history.append(kit.record(step, rows, lr, loss.item(), scale=scale))

args.output.mkdir(parents=True)
state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "data": order.state_dict()}
state |= {"ema": ema.state_dict()} | ({} if args.bug == "lose-scaler" else {"scaler": scaler.state_dict()})
kit.save_checkpoint(args.output / "checkpoint.pt", state | {"rng": gens.state(), "step": step, "history": history})
kit.write_summary(
    args.output,
    step=step,
    history=history,
    state={"model": model.state_dict(), "optimizer": optimizer.state_dict(), "scaler": scaler.state_dict()},
    next={"lr": optimizer.param_groups[0]["lr"], "rng": gens.peek()},
    eval={"mse": torch.nn.functional.mse_loss(ema.module.eval()(x), y).item()},
    meta={},
)
