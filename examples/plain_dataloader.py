"""Plain PyTorch with a shuffling DataLoader, saved the careful way, as a protocol trainer through the kit itself.

    resumeproof verify --output runs/plain --steps 12 --interrupt-at epochs \
        --train-cmd "python -B examples/plain_dataloader.py"

PyTorch's own recipe ("Saving and loading a general checkpoint") saves the epoch, the model and
the optimizer; an exact resume needs more, and this loop saves it: the scheduler, the global
generators, and the data position as the DataLoader generator's state *when the epoch's
iterator started* (a `RandomSampler` draws the epoch's permutation at its first batch, and one
more when the exhausted iterator is asked again) with the number of batches taken. The resume
rebuilds the epoch's iterator from that state, fetches past the taken batches and restores the
global generators last, because fetching draws augmentation from them. Lines marked
`# protocol` are all the protocol asks of the script.
"""

import random

import experiment as E
import numpy as np
import torch
from torch.utils.data import DataLoader

from resumeproof import kit  # protocol

run = kit.start(("model", "optimizer", "scheduler", "data", "rng-python", "rng-numpy", "rng-torch"))  # protocol
random.seed(E.EXPERIMENT.seed)
np.random.seed(E.EXPERIMENT.seed)
torch.manual_seed(E.EXPERIMENT.seed)
x, y = E.data()
model = E.Net()
optimizer, scheduler = E.optimizer_and_scheduler(model.parameters())
order = torch.Generator().manual_seed(1)  # the sampler's own: the DataLoader hands it to its RandomSampler
loader = DataLoader(E.Rows(x, y), batch_size=E.EXPERIMENT.batch, shuffle=True, generator=order)
generators = kit.Generators.global_()  # python, numpy, torch: capture and restore as plain data
epoch, taken, epoch_start = 0, 0, order.get_state()

state = run.loaded or {}  # protocol: the resumed checkpoint, fingerprint checked, loaded with weights_only
for part, thing in (("model", model), ("scheduler", scheduler), ("optimizer", optimizer)):
    if run.restores(part):  # protocol: --omit
        thing.load_state_dict(state[part])
if run.restores("data"):  # protocol: --omit
    epoch, taken, epoch_start = state["data"]["epoch"], state["data"]["taken"], state["data"]["generator"]
order.set_state(epoch_start)
batches = iter(loader)
for _ in range(taken):  # fetched and discarded: the same draws as the first run made, nothing trained
    next(batches)
if run.resume is not None:  # protocol: the generators --omit does not name, last: fetching above drew from them
    generators.restore(state["rng"], run.args.restored_generators(generators.names))

while not run.done():  # protocol
    try:
        batch = next(batches)
    except StopIteration:  # the exhausted sampler has just drawn one more permutation from `order`
        epoch, taken, epoch_start = epoch + 1, 0, order.get_state()
        batches = iter(loader)
        batch = next(batches)
    taken += 1
    loss = E.loss_fn(model(batch["x"]), batch["y"])
    run.record(rows=batch["idx"].tolist(), lr=optimizer.param_groups[0]["lr"], loss=loss.item())  # protocol
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    scheduler.step()

parts = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict()}
position = {"epoch": epoch, "taken": taken}
checkpoint = {**parts, "data": {**position, "generator": epoch_start}, "rng": generators.state()}
run.track(loader=order)  # protocol: its next draw is compared too
run.finish(  # protocol: OUTPUT/checkpoint.pt, fingerprinted, then summary.json
    checkpoint, state={**parts, "data": position}, eval=E.evaluate(model, x, y), lr=optimizer.param_groups[0]["lr"]
)
