"""A tabular model whose behaviour depends on the process from the first update: nothing a checkpoint could hold.

    python -B verify_resume.py --output runs/early \
        --train-cmd "python -B tests/trainers/corpus/early_nondeterminism.py --bug hash-order"

Bugs (run with PYTHONHASHSEED unset, as Python runs by default):
- `hash-order`: the input columns are stacked in the iteration order of a *set* of feature names,
  which depends on the per-process string hash seed: every process feeds the same weights
  another column order.
- `unseeded`: the shuffle generator is created without a seed (`np.random.default_rng()`); the
  checkpoint saves and restores it exactly, but two fresh runs never shuffle alike.

Either way the interrupted run is not a prefix of the continuous one: the true verdict is "not
deterministic", and no part was lost (every part is restored exactly). Without `--bug`: the
columns in sorted order, the generator seeded. Parts: model, optimizer, data, rng-numpy, rng-torch.
"""

import _corpus
import numpy as np
import torch

from resumeproof import kit

PARTS = ("model", "optimizer", "data", "rng-numpy", "rng-torch")
FEATURES = {"age", "height", "weight", "income", "score", "tenure", "visits", "clicks"}
ROWS = 16
args, flags = _corpus.parse(PARTS, __doc__, bugs=("hash-order", "unseeded"))
kit.configure_torch()

torch.manual_seed(0)
t = torch.linspace(0, 1, ROWS)
table = {name: torch.sin((i + 1) * 2.0 * t + i) for i, name in enumerate(sorted(FEATURES))}  # a column per feature
columns = list(FEATURES) if flags.bug == "hash-order" else sorted(FEATURES)
x = torch.stack([table[name] for name in columns], dim=1)
y = (table["age"] - table["income"] + 0.5 * table["clicks"]).unsqueeze(1)
model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Tanh(), torch.nn.Dropout(0.1), torch.nn.Linear(8, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=0.03)
shuffle = np.random.default_rng() if flags.bug == "unseeded" else np.random.default_rng(0)
gens = kit.Generators(numpy=shuffle, torch=torch.default_generator)
order = kit.ShuffledOrder.fresh(ROWS, shuffle)
step, history = 0, []

if args.resume:
    ckpt = kit.load_checkpoint(args.resume)
    for part, thing in (("model", model), ("optimizer", optimizer), ("data", order)):
        if part not in args.omit:
            thing.load_state_dict(ckpt[part])
    step, history = ckpt["step"], ckpt["history"]
    gens.restore(ckpt["rng"], [n for n in gens.names if f"rng-{n}" not in args.omit])

for _ in range(args.steps):
    rows = order.take(4, shuffle)
    lr = optimizer.param_groups[0]["lr"]
    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x[rows]), y[rows])
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
    eval={"mse": torch.nn.functional.mse_loss(model.eval()(x), y).item()},
    meta=_corpus.meta(args, PARTS),
)
