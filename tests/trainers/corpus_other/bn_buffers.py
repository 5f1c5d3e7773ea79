"""Model buffers: an input normalizer with running statistics that decay fast, and a BatchNorm layer.

    python -B verify_resume.py --output runs/buffers \
        --train-cmd "python -B tests/trainers/corpus_other/bn_buffers.py --bug params-only"

No resumeproof (tests/trainers/corpus_other/_plain.py). `RunningNorm` normalizes every input by running mean and
variance that it first updates from the training batch (as reinforcement-learning observation normalizers do), with
`momentum=0.99` written the Keras way round: each batch gets weight 0.99, so the old statistics decay by 100 per
update. A BatchNorm1d (torch's momentum 0.1) follows the first layer; its running statistics serve only evaluation.
The summary reports the model's state_dict and the normalizer's statistics.

Bugs (true cause `net` for both, the model's buffers):
- `params-only`: the checkpoint holds `dict(model.named_parameters())` and the resume loads it with
  `strict=False`: every buffer starts again as built (the normalizer's statistics, BatchNorm's running mean, variance
  and batch count).
- `nonpersistent-stats`: the normalizer registers its statistics with `persistent=False` ("they are recomputed from
  the data"), so `state_dict()` does not hold them: the resumed run normalizes its first updates with fresh ones.
  Self-correcting: the statistics decay back to the continuous run's (equal to 1e-14 after seven updates, verified
  at 12 updates interrupted at 5), while the weights they shaped stay different.
Parts: net, opt, data (the epoch's permutation, the position and the shuffling generator), rng-torch (dropout).
"""

import _plain
import torch
from torch import nn

PARTS = ("net", "opt", "data", "rng-torch")


class RunningNorm(nn.Module):
    def __init__(self, dim: int, momentum: float = 0.99, persistent: bool = True) -> None:
        super().__init__()
        self.momentum = momentum
        self.register_buffer("mean", torch.zeros(dim), persistent=persistent)
        self.register_buffer("var", torch.ones(dim), persistent=persistent)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.training:
            with torch.no_grad():
                self.mean.mul_(1 - self.momentum).add_(self.momentum * x.mean(0))
                self.var.mul_(1 - self.momentum).add_(self.momentum * x.var(0, unbiased=False))
        return (x - self.mean) / torch.sqrt(self.var + 1e-5)


class Net(nn.Module):
    def __init__(self, persistent: bool) -> None:
        super().__init__()
        self.norm = RunningNorm(3, persistent=persistent)
        self.body = nn.Sequential(nn.Linear(3, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.1), nn.Linear(16, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(self.norm(x))


args = _plain.get_args(__doc__, PARTS, bugs=("params-only", "nonpersistent-stats"))
torch.set_num_threads(1)
torch.set_default_dtype(torch.float64)
torch.manual_seed(5)

inputs = 3.0 + 2.0 * torch.rand(24, 3)
targets = (inputs[:, :1] - 3.5) * (inputs[:, 1:2] - 4.0) + torch.cos(inputs[:, 2:])
model = Net(persistent=args.bug != "nonpersistent-stats")
opt = torch.optim.Adam(model.parameters(), lr=0.01)
gen = torch.Generator().manual_seed(17)
perm, at, step, history = torch.randperm(24, generator=gen), 0, 0, []

if args.resume:
    ckpt = _plain.load(args.resume)
    if _plain.restore(args, "net"):
        model.load_state_dict(ckpt["model"], strict=args.bug != "params-only")
    if _plain.restore(args, "opt"):
        opt.load_state_dict(ckpt["opt"])
    if _plain.restore(args, "data"):
        perm, at = ckpt["perm"], ckpt["at"]
        gen.set_state(ckpt["gen"])
    if _plain.restore(args, "rng-torch"):
        torch.set_rng_state(ckpt["rng"])
    step, history = ckpt["step"], ckpt["history"]

for _ in range(args.steps):
    if at == 24:
        perm, at = torch.randperm(24, generator=gen), 0
    batch = perm[at : at + 6]
    at += 6
    model.train()
    opt.zero_grad()
    loss = nn.functional.mse_loss(model(inputs[batch]), targets[batch])
    loss.backward()
    opt.step()
    step += 1
    history.append({"step": step, "rows": batch.tolist(), "lr": opt.param_groups[0]["lr"], "loss": loss.item()})

weights = dict(model.named_parameters()) if args.bug == "params-only" else model.state_dict()
ckpt = {"model": {k: v.detach() for k, v in weights.items()}, "opt": opt.state_dict(), "perm": perm, "at": at}
ckpt |= {"gen": gen.get_state(), "rng": torch.get_rng_state(), "step": step, "history": history}
_plain.save(ckpt, args.output / "checkpoint.pt")
model.eval()
with torch.no_grad():
    predictions = model(inputs)
_plain.write_summary(
    args,
    PARTS,
    step=step,
    history=history,
    state={
        "model": model.state_dict(),
        "input_norm": {"mean": model.norm.mean, "var": model.norm.var},
        "opt": opt.state_dict(),
        "at": at,
    },
    next={"lr": opt.param_groups[0]["lr"], "rng": {"torch": _plain.peek(), "data": _plain.peek(gen)}},
    eval={"mse": nn.functional.mse_loss(predictions, targets).item()},
)
