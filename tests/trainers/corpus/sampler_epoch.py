"""A DataLoader over a DistributedSampler (one replica), reshuffled each epoch by `sampler.set_epoch(epoch)`.

    python -B verify_resume.py --output runs/sampler \
        --train-cmd "python -B tests/trainers/corpus/sampler_epoch.py --bug skip-set-epoch"

The sampler's permutation is a function of its seed and epoch, so the data position is the epoch
and the number of batches taken in it. Built on `kit.start` (the global generators peeked: the
dropout draws from torch's).

Bug `skip-set-epoch`: the resume restores the epoch and fetches past the batches taken, but builds
the epoch's iterator without calling `sampler.set_epoch(epoch)` first (the loop calls it only when
an epoch begins): the resumed epoch replays epoch 0's order. True cause: `data`. Parts: model,
optimizer, data, rng-torch.
"""

import _corpus
import torch
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

from resumeproof import kit

PARTS = ("model", "optimizer", "data", "rng-torch")
BUGS = ("skip-set-epoch",)
bug = _corpus.chosen_bug(BUGS)
run = kit.start(PARTS, argv=_corpus.protocol_argv(BUGS), float64=False)
kit.configure_torch()  # the shortcut path: this loop never compiles (kit.start would take the stock one)
run.generators = kit.Generators(torch=torch.default_generator)

torch.manual_seed(0)
x, y = _corpus.regression(16)
model = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.Tanh(), torch.nn.Dropout(0.2), torch.nn.Linear(8, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
data = TensorDataset(torch.arange(16), x, y)
sampler = DistributedSampler(data, num_replicas=1, rank=0, shuffle=True, seed=3)
loader = DataLoader(data, batch_size=4, sampler=sampler)
epoch, taken = 0, 0

saved = run.loaded or {}
for part, thing in (("model", model), ("optimizer", optimizer)):
    if run.restores(part):
        thing.load_state_dict(saved[part])
if run.restores("data"):
    epoch, taken = saved["epoch"], saved["taken"]
if bug is None:
    sampler.set_epoch(epoch)
batches = iter(loader)
for _ in range(taken):
    next(batches)
if run.resume is not None:
    run.generators.restore(saved["rng"], [n for n in run.generators.names if run.restores(f"rng-{n}")])

while not run.done():
    if taken == len(loader):
        epoch, taken = epoch + 1, 0
        sampler.set_epoch(epoch)
        batches = iter(loader)
    ids, xb, yb = next(batches)
    taken += 1
    lr = optimizer.param_groups[0]["lr"]
    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(model(xb), yb)
    loss.backward()
    optimizer.step()
    run.record(rows=ids.tolist(), lr=lr, loss=loss.item())

parts = {"model": model.state_dict(), "optimizer": optimizer.state_dict()}
run.finish(
    {**parts, "epoch": epoch, "taken": taken, "rng": run.generators.state()},
    state={**parts, "data": {"epoch": epoch, "taken": taken}},
    eval={"mse": torch.nn.functional.mse_loss(model.eval()(x), y).item()},
    lr=optimizer.param_groups[0]["lr"],
    meta={"parts": list(PARTS)},
)
