"""Dropout masks drawn from a torch.Generator of the trainer's own, handed to the model when it is built.

    python -B verify_resume.py --output runs/masks \
        --train-cmd "python -B tests/trainers/corpus_other/dropout_own_gen.py --bug rebind-generator"

No resumeproof (tests/trainers/corpus_other/_plain.py). `MaskDropout` keeps a reference to the generator it was
given, so that the masks do not depend on whatever else draws from torch's global generator; the data order comes
from a NumPy Generator. The checkpoint holds both generators' states; the summary reports the next draws of
`mask_rng`, the trainer's name for the mask generator.

Bugs (true cause `rng-dropout` for both):
- `rebind-generator`: the resume builds a new generator from the saved state and binds it to the trainer's name,
  `mask_rng = torch.Generator(); mask_rng.set_state(...)`, while the model still holds the one it was built with,
  freshly seeded: the reported next draws are right, the masks the model draws are not.
- `reseed-from-step`: the resume seeds the mask generator with `seed + global_step` instead of restoring it (a
  "reproducible on resume" seed that the continuous run never used).
Parts: model, optimizer, data (position and the order's NumPy generator), rng-dropout.
"""

import _plain
import numpy as np
import torch
from torch import nn

PARTS = ("model", "optimizer", "data", "rng-dropout")
SEED = 2024


class MaskDropout(nn.Module):
    def __init__(self, p: float, generator: torch.Generator) -> None:
        super().__init__()
        self.p, self.generator = p, generator

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.training:
            return x
        keep = torch.rand(x.shape, generator=self.generator) >= self.p
        return x * keep / (1 - self.p)


args = _plain.get_args(__doc__, PARTS, bugs=("rebind-generator", "reseed-from-step"))
torch.set_num_threads(1)
torch.set_default_dtype(torch.float64)
torch.manual_seed(SEED)

X = torch.linspace(0, 1, 40).reshape(20, 2)
Y = torch.stack([X[:, 0] * 2 - X[:, 1], X[:, 0] * X[:, 1]], dim=1)
mask_rng = torch.Generator().manual_seed(SEED)
model = nn.Sequential(nn.Linear(2, 24), nn.ReLU(), MaskDropout(0.25, mask_rng), nn.Linear(24, 2))
optimizer = torch.optim.RMSprop(model.parameters(), lr=0.005)
order_rng = np.random.default_rng(SEED)
perm, pos, global_step, history = order_rng.permutation(20), 0, 0, []

if args.resume:
    saved = _plain.load(args.resume)
    if _plain.restore(args, "model"):
        model.load_state_dict(saved["model"])
    if _plain.restore(args, "optimizer"):
        optimizer.load_state_dict(saved["optimizer"])
    if _plain.restore(args, "data"):
        perm, pos = saved["perm"].numpy(), saved["pos"]
        order_rng.bit_generator.state = saved["order_rng"]
    global_step, history = saved["global_step"], saved["history"]
    if _plain.restore(args, "rng-dropout"):
        if args.bug == "rebind-generator":
            mask_rng = torch.Generator()
            mask_rng.set_state(saved["mask_rng"])
        elif args.bug == "reseed-from-step":
            mask_rng.manual_seed(SEED + global_step)
        else:
            mask_rng.set_state(saved["mask_rng"])

for _ in range(args.steps):
    if pos == 20:
        perm, pos = order_rng.permutation(20), 0
    rows = perm[pos : pos + 5]
    pos += 5
    model.train()
    optimizer.zero_grad()
    loss = nn.functional.mse_loss(model(X[rows]), Y[rows])
    loss.backward()
    optimizer.step()
    global_step += 1
    history.append(
        {"step": global_step, "rows": rows.tolist(), "lr": optimizer.param_groups[0]["lr"], "loss": loss.item()}
    )

saved = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "perm": torch.from_numpy(perm), "pos": pos}
saved |= {"order_rng": order_rng.bit_generator.state, "mask_rng": mask_rng.get_state()}
saved |= {"global_step": global_step, "history": history}
_plain.save(saved, args.output / "checkpoint.pt")
model.eval()
with torch.no_grad():
    mse = nn.functional.mse_loss(model(X), Y).item()
order_state = order_rng.bit_generator.state
order_next = order_rng.random(3).tolist()
order_rng.bit_generator.state = order_state
_plain.write_summary(
    args,
    PARTS,
    step=global_step,
    history=history,
    state={"model": model.state_dict(), "optimizer": optimizer.state_dict(), "pos": pos, "perm": perm.tolist()},
    next={"lr": optimizer.param_groups[0]["lr"], "rng": {"dropout": _plain.peek(mask_rng), "order": order_next}},
    eval={"mse": mse},
)
