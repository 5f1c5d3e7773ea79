"""Dropout masks drawn from a dedicated torch.Generator, so that the data order and the masks have their own streams.

    python -B verify_resume.py --output runs/dropout \
        --train-cmd "python -B tests/trainers/corpus/dropout_generator.py --bug unsaved-generator"

The correct loop saves the mask generator with the others, reports its next draw in
`next.rng.dropout` and declares it as the part `rng-dropout`.

Bug `unsaved-generator`: the loop was written before the mask generator existed: the generator
is neither saved, nor reported in `next`, nor declared as a part. The resumed run draws masks
from the freshly seeded generator. Model, optimizer, data and the NumPy generator are restored
exactly: none of them may be blamed. The honest diagnosis names no part ("unknown") or the
undeclared `rng-dropout`. Parts: model, optimizer, data, rng-numpy (and rng-dropout when fixed).
"""

import _corpus
import numpy as np
import torch

from resumeproof import kit

BUGS = ("unsaved-generator",)
bug = _corpus.chosen_bug(BUGS)
PARTS = ("model", "optimizer", "data", "rng-numpy", *(() if bug else ("rng-dropout",)))
args, flags = _corpus.parse(PARTS, __doc__, bugs=BUGS)
kit.configure_torch()

torch.manual_seed(0)
x, y = _corpus.regression(16)
hidden, head = torch.nn.Linear(2, 8), torch.nn.Linear(8, 1)
model = torch.nn.ModuleDict({"hidden": hidden, "head": head})
optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
masks = torch.Generator().manual_seed(1234)
gens = kit.Generators(numpy=np.random.default_rng(0), **({} if bug else {"dropout": masks}))
order = kit.ShuffledOrder.fresh(16, gens["numpy"])
step, history = 0, []


def forward(inputs: torch.Tensor, train: bool) -> torch.Tensor:
    h = torch.tanh(hidden(inputs))
    if train:
        h = h * (torch.rand(h.shape, generator=masks) > 0.25) / 0.75
    return head(h)


if args.resume:
    ckpt = kit.load_checkpoint(args.resume)
    for part, thing in (("model", model), ("optimizer", optimizer), ("data", order)):
        if part not in args.omit:
            thing.load_state_dict(ckpt[part])
    step, history = ckpt["step"], ckpt["history"]
    gens.restore(ckpt["rng"], [n for n in gens.names if f"rng-{n}" not in args.omit])

for _ in range(args.steps):
    rows = order.take(4, gens["numpy"])
    lr = optimizer.param_groups[0]["lr"]
    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(forward(x[rows], train=True), y[rows])
    loss.backward()
    optimizer.step()
    step += 1
    history.append(kit.record(step, rows, lr, loss.item()))

args.output.mkdir(parents=True)
ckpt = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "data": order.state_dict()}
kit.save_checkpoint(args.output / "checkpoint.pt", ckpt | {"rng": gens.state(), "step": step, "history": history})
kit.write_summary(
    args.output,
    step=step,
    history=history,
    state={"model": model.state_dict(), "optimizer": optimizer.state_dict(), "data": order.state_dict()},
    next={"lr": optimizer.param_groups[0]["lr"], "rng": gens.peek()},
    eval={"mse": torch.nn.functional.mse_loss(forward(x, train=False), y).item()},
    meta=_corpus.meta(args, PARTS),
)
