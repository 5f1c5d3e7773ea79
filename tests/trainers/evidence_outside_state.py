"""A kit trainer whose forward pass is gated by state outside every state_dict: the diagnosis names it where the
observer can see it (a plain attribute of the model, `model.hard`, with its values on both sides), and where it
cannot (a module global) says "state outside the state_dict", with the same parameters, batch and generators as its
evidence, and names no part.

    python -B verify_resume.py --output runs/outside --steps 6 --interrupt-at 3 \
        --train-cmd "python -B tests/trainers/evidence_outside_state.py --bug attribute"

float64 regression, Adam, dropout from torch's global generator, a NumPy-shuffled data order. After update 2 a
curriculum switches on: the model adds a second, harder term to its output. Correct, the switch is saved in the
checkpoint and set back at the resume. Bugs: `attribute` (the switch is a Python attribute of the model,
`model.hard`, not saved), `global` (the switch is a module-level global, not saved). True cause for both: state
outside the state_dict: `model.hard`; for the global, no part the observer can see.
"""

import numpy as np
import torch
from _protocol_files import parser

from resumeproof import kit

cli = parser()
cli.add_argument("--bug", choices=("attribute", "global"))
args = cli.parse_args()
kit.refuse_existing(args.output)
kit.configure_torch(dtype=torch.float64)
HARD = False  # the `global` style's switch


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.Tanh(), torch.nn.Dropout(0.2))
        self.head, self.extra = torch.nn.Linear(8, 1), torch.nn.Linear(8, 1)
        self.hard = False  # the `attribute` style's switch: a plain attribute, in no state_dict

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        h = self.body(inputs)
        switched = HARD if args.bug == "global" else self.hard
        return self.head(h) + (self.extra(h) if switched else 0.0)


def switch(on: bool) -> None:
    global HARD
    HARD, model.hard = on, on


torch.manual_seed(0)
x = torch.linspace(-1, 1, 32).reshape(16, 2)
y = x[:, :1] - 2 * x[:, 1:] + 0.3 * torch.sin(3 * x[:, :1])
model = Net()
optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
gens = kit.Generators(numpy=np.random.default_rng(0), torch=torch.default_generator)
order = kit.ShuffledOrder.fresh(16, gens["numpy"])
step, history = 0, []

if args.resume:
    ckpt = kit.load_checkpoint(args.resume)
    model.load_state_dict(ckpt["model"])
    optimizer.load_state_dict(ckpt["optimizer"])
    order.load_state_dict(ckpt["data"])
    if args.bug != "attribute":  # the fix: the switch travels with the checkpoint (the attribute's)
        model.hard = ckpt["hard"]
    if args.bug != "global":  # (the global's)
        HARD = ckpt["hard"]
    step, history = ckpt["step"], ckpt["history"]
    if not args.omit_rng_restore:
        gens.restore(ckpt["rng"], gens.names)

for _ in range(args.steps):
    rows = order.take(4, gens["numpy"])
    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x[rows]), y[rows])
    loss.backward()
    optimizer.step()
    step += 1
    history.append(kit.record(step, rows, optimizer.param_groups[0]["lr"], loss.item()))
    if step == 2:
        switch(True)

args.output.mkdir(parents=True)
state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "data": order.state_dict()}
saved = state | {"hard": model.hard, "rng": gens.state(), "step": step, "history": history}
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
