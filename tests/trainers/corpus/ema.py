"""An exponential moving average of the weights, kept beside the model and evaluated instead of it.

    python -B verify_resume.py --output runs/ema --train-cmd "python -B tests/trainers/corpus/ema.py --bug lose-ema"

The EMA decay warms up with the number of EMA updates (`decay = min(0.99, (1 + n) / (10 + n))`,
the YOLO / timm ModelEmaV2 schedule), so the average holds two states: its weights and its
counter. Neither changes a training update: a lost EMA shows only in `state.ema` and in `eval`.

Bugs: `lose-ema` saves no EMA (the resume starts a fresh average from the restored weights, as a
fresh run does); `lose-ema-updates` saves the averaged weights but not the counter. True cause:
`ema` for both. Parts: model, optimizer, ema, data, rng-numpy, rng-torch.
"""

import _corpus
import numpy as np
import torch

from resumeproof import kit

PARTS = ("model", "optimizer", "ema", "data", "rng-numpy", "rng-torch")
args, flags = _corpus.parse(PARTS, __doc__, bugs=("lose-ema", "lose-ema-updates"))
kit.configure_torch()

torch.manual_seed(0)
x, y = _corpus.regression(16)
model = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.Tanh(), torch.nn.Dropout(0.2), torch.nn.Linear(8, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
gens = kit.Generators(numpy=np.random.default_rng(0), torch=torch.default_generator)
order = kit.ShuffledOrder.fresh(16, gens["numpy"])


class Ema:
    """Averaged copies of the parameters, and how many updates they have seen."""

    def __init__(self, net: torch.nn.Module) -> None:
        self.weights = {name: p.detach().clone() for name, p in net.named_parameters()}
        self.updates = 0

    def update(self, net: torch.nn.Module) -> None:
        decay = min(0.99, (1 + self.updates) / (10 + self.updates))
        with torch.no_grad():
            for name, p in net.named_parameters():
                self.weights[name].mul_(decay).add_(p.detach(), alpha=1 - decay)
        self.updates += 1

    def state_dict(self) -> dict:
        return {"weights": self.weights, "updates": self.updates}

    def load_state_dict(self, state: dict) -> None:
        self.weights = {name: w.clone() for name, w in state["weights"].items()}
        self.updates = state["updates"]


step, history = 0, []
if args.resume:
    state = kit.load_checkpoint(args.resume)
    for part, thing in (("model", model), ("optimizer", optimizer), ("data", order)):
        if part not in args.omit:
            thing.load_state_dict(state[part])
    ema = Ema(model)  # from the weights just restored, as a fresh run starts from its initial ones
    if "ema" not in args.omit and flags.bug == "lose-ema-updates":
        ema.weights = {name: w.clone() for name, w in state["ema_weights"].items()}  # the bug: the counter stays 0
    elif "ema" not in args.omit and flags.bug is None:
        ema.load_state_dict(state["ema"])
    step, history = state["step"], state["history"]
    gens.restore(state["rng"], [name for name in gens.names if f"rng-{name}" not in args.omit])
else:
    ema = Ema(model)

for _ in range(args.steps):
    rows = order.take(4, gens["numpy"])
    lr = optimizer.param_groups[0]["lr"]
    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x[rows]), y[rows])
    loss.backward()
    optimizer.step()
    ema.update(model)
    step += 1
    history.append(kit.record(step, rows, lr, loss.item()))

args.output.mkdir(parents=True)
state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "data": order.state_dict()}
if flags.bug is None:
    state["ema"] = ema.state_dict()
elif flags.bug == "lose-ema-updates":
    state["ema_weights"] = ema.weights
state |= {"rng": gens.state(), "step": step, "history": history}
kit.save_checkpoint(args.output / "checkpoint.pt", state)
averaged = torch.func.functional_call(model.eval(), ema.weights, (x,))
kit.write_summary(
    args.output,
    step=step,
    history=history,
    state={"model": model.state_dict(), "optimizer": optimizer.state_dict(), "ema": ema.state_dict()},
    next={"lr": optimizer.param_groups[0]["lr"], "rng": gens.peek()},
    eval={
        "mse": torch.nn.functional.mse_loss(model(x), y).item(),
        "ema_mse": torch.nn.functional.mse_loss(averaged, y).item(),
    },
    meta=_corpus.meta(args, PARTS),
)
