"""torchdata's StatefulDataLoader: the loader's own state_dict is the data position, almost.

    python -B verify_resume.py --output runs/stateful \
        --train-cmd "python -B tests/trainers/corpus/stateful_loader.py --bug lose-loader"

The loader shuffles with its own generator and keeps, in `state_dict()`, the sampler's generator
state and how many batches it yielded; `load_state_dict()` before `iter()` continues the epoch
where the checkpoint left it. Built on `kit.start`, which peeks the global generators (dropout
draws from torch's) and writes `meta.omitted`.

As documented, that is one draw short (torchdata 0.11.0): each `iter()` draws the permutation
(torchdata's sampler does so as it is created, from the state it saves) and then the workers'
base seed, from the same generator (torch's `_BaseDataLoaderIter`, after `iter(sampler)`). The
restore replays the permutation, not the base seed, so the generator is one draw behind and the
next epoch is shuffled differently, whatever k. The correct loop also saves the generator's live
state and sets it after `iter()`.

Bugs: `loader-state-only` saves and loads `loader.state_dict()` exactly as documented;
`lose-loader` saves no loader state (a fresh loader from the start of its first epoch). True
cause: `loader` (this trainer's name for its data position and shuffle generator) for both.
Parts: model, optimizer, loader, rng-torch.
"""

import _corpus
import torch
from torch.utils.data import TensorDataset
from torchdata.stateful_dataloader import StatefulDataLoader

from resumeproof import kit

PARTS = ("model", "optimizer", "loader", "rng-torch")
BUGS = ("loader-state-only", "lose-loader")
bug = _corpus.chosen_bug(BUGS)
run = kit.start(PARTS, argv=_corpus.protocol_argv(BUGS), float64=False)
kit.configure_torch()  # the shortcut path: this loop never compiles (kit.start would take the stock one)
run.generators = kit.Generators(torch=torch.default_generator)  # the only global generator this loop draws from

torch.manual_seed(0)
x, y = _corpus.regression(16)
model = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.Tanh(), torch.nn.Dropout(0.2), torch.nn.Linear(8, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
shuffle = torch.Generator().manual_seed(2)
loader = StatefulDataLoader(TensorDataset(torch.arange(16), x, y), batch_size=4, shuffle=True, generator=shuffle)

saved = run.loaded or {}
if run.restores("model"):
    model.load_state_dict(saved["model"])
if run.restores("optimizer"):
    optimizer.load_state_dict(saved["optimizer"])
if run.restores("loader") and bug != "lose-loader":
    loader.load_state_dict(saved["loader"])
if run.resume is not None:
    run.generators.restore(saved["rng"], [n for n in run.generators.names if run.restores(f"rng-{n}")])

batches = iter(loader)  # applies the loaded state
if run.restores("loader") and bug is None:
    shuffle.set_state(saved["shuffle"])  # the draw the restore does not replay: the base seed
while not run.done():
    try:
        ids, xb, yb = next(batches)
    except StopIteration:
        batches = iter(loader)
        ids, xb, yb = next(batches)
    lr = optimizer.param_groups[0]["lr"]
    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(model(xb), yb)
    loss.backward()
    optimizer.step()
    run.record(rows=ids.tolist(), lr=lr, loss=loss.item())

position = loader.state_dict()
checkpoint = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "rng": run.generators.state()}
if bug != "lose-loader":
    checkpoint["loader"] = position
if bug is None:
    checkpoint["shuffle"] = shuffle.get_state()
run.finish(
    checkpoint,
    state={"model": model.state_dict(), "optimizer": optimizer.state_dict(), "loader": position},
    eval={"mse": torch.nn.functional.mse_loss(model.eval()(x), y).item()},
    lr=optimizer.param_groups[0]["lr"],
    meta={"parts": list(PARTS)},
)
