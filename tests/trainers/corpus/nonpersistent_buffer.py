"""An input normalizer whose running mean lives in non-persistent buffers, updated by every training forward.

    python -B verify_resume.py --output runs/buffers \
        --train-cmd "python -B tests/trainers/corpus/nonpersistent_buffer.py --bug lose-buffers"

`register_buffer(..., persistent=False)` keeps a buffer out of `state_dict()`: the normalizer's
count and mean change at every update and decide every forward, but `model.state_dict()` does
not hold them. The correct resume saves them beside the state_dict (`model_buffers`) and
restores them with the model; `state.model` reports both.

Bug `lose-buffers`: only `model.state_dict()` is saved; the resumed model normalizes with a fresh
running mean. True cause: `model` (the buffers are the model's: `--omit=model` leaves them as
built too). Parts: model, optimizer, data, rng-numpy.
"""

import _corpus
import numpy as np
import torch

from resumeproof import kit

PARTS = ("model", "optimizer", "data", "rng-numpy")
args, flags = _corpus.parse(PARTS, __doc__, bugs=("lose-buffers",))
kit.configure_torch()


class RunningNorm(torch.nn.Module):
    """Subtracts the running mean of the inputs seen in training."""

    def __init__(self, features: int) -> None:
        super().__init__()
        self.register_buffer("count", torch.zeros((), dtype=torch.int64), persistent=False)
        self.register_buffer("mean", torch.zeros(features), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.training:
            with torch.no_grad():
                self.count += 1
                self.mean += (x.mean(0) - self.mean) / self.count
        return x - self.mean


torch.manual_seed(0)
x, y = _corpus.regression(16)
x = x + torch.tensor([0.5, -0.3])  # inputs off-centre: the mean matters
model = torch.nn.Sequential(RunningNorm(2), torch.nn.Linear(2, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
gens = kit.Generators(numpy=np.random.default_rng(0))
order = kit.ShuffledOrder.fresh(16, gens["numpy"])
step, history = 0, []


def buffers() -> dict[str, torch.Tensor]:
    return {name: b.clone() for name, b in model.named_buffers()}


if args.resume:
    ckpt = kit.load_checkpoint(args.resume)
    if "model" not in args.omit:
        model.load_state_dict(ckpt["model"])
        if flags.bug is None:
            for name, value in ckpt["model_buffers"].items():
                model.get_buffer(name).copy_(value)
    for part, thing in (("optimizer", optimizer), ("data", order)):
        if part not in args.omit:
            thing.load_state_dict(ckpt[part])
    step, history = ckpt["step"], ckpt["history"]
    gens.restore(ckpt["rng"], [n for n in gens.names if f"rng-{n}" not in args.omit])

for _ in range(args.steps):
    rows = order.take(4, gens["numpy"])
    lr = optimizer.param_groups[0]["lr"]
    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x[rows]), y[rows])
    loss.backward()
    optimizer.step()
    step += 1
    history.append(kit.record(step, rows, lr, loss.item()))

args.output.mkdir(parents=True)
ckpt = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "data": order.state_dict()}
if flags.bug is None:
    ckpt["model_buffers"] = buffers()
kit.save_checkpoint(args.output / "checkpoint.pt", ckpt | {"rng": gens.state(), "step": step, "history": history})
kit.write_summary(
    args.output,
    step=step,
    history=history,
    state={"model": {**model.state_dict(), **buffers()}, "optimizer": optimizer.state_dict()},
    next={"lr": optimizer.param_groups[0]["lr"], "rng": gens.peek()},
    eval={"mse": torch.nn.functional.mse_loss(model.eval()(x), y).item()},
    meta=_corpus.meta(args, PARTS),
)
