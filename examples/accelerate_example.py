"""Accelerate 1.15, resumed the way its documentation tells users to, as a protocol trainer (docs/audit.md).

    resumeproof verify --output runs/accelerate --steps 12 --interrupt-at epochs \
        --allow-unsafe-pickle 'random_states_*.pkl' --train-cmd "python -B examples/accelerate_example.py"

The resume path is the Checkpointing guide's: `save_state()` for "the model, optimizer, RNG
generators, and the GradScaler", `load_state()` to restore them, and for a mid-epoch checkpoint
`skip_first_batches()` on the prepared DataLoader for the first resumed epoch only; the position
is derived from the step, as the by_feature/checkpointing.py example in Accelerate's repository
does. Lines marked
`# protocol` are all the protocol asks of the script. `--fix user` applies docs/audit.md's
user-level fix; `--remove-cause CODE` removes one confirmed cause (examples/causes.py).
"""

import itertools

import causes
import experiment as E
import torch
from accelerate import Accelerator
from accelerate.utils import DataLoaderConfiguration, set_seed
from torch.utils.data import DataLoader

from resumeproof import kit  # protocol
from resumeproof.kit.adapters import accelerate  # protocol

variant, argv = causes.parse("accelerate")
fixed = variant.fix == "user"
run = kit.start(accelerate.PARTS, argv)  # protocol

seedable = fixed or variant.removes("A1")  # the order becomes f(seed, epoch), not a global draw
accelerator = Accelerator(cpu=True, dataloader_config=DataLoaderConfiguration(use_seedable_sampler=seedable))
set_seed(E.EXPERIMENT.seed)
x, y = E.data()
model = E.Net()
optimizer, scheduler = E.optimizer_and_scheduler(model.parameters())
dataset = (E.StatelessRows if fixed else E.Rows)(x, y)
generator = torch.Generator().manual_seed(1) if fixed else None  # iterators stop drawing from the global one
loader = DataLoader(dataset, batch_size=E.EXPERIMENT.batch, shuffle=True, generator=generator)
model, optimizer, loader, scheduler = accelerator.prepare(model, optimizer, loader, scheduler)

resumable = accelerate.Resumable(run=run, accelerator=accelerator, loader=loader)  # protocol
position = resumable.load()  # protocol: accelerator.load_state(run.resume), checked

for epoch in itertools.count(position.epoch):
    if fixed or variant.removes("A2"):
        loader.set_epoch(epoch)  # a resumed process does not know its epoch otherwise
    skip = position.batch if epoch == position.epoch else 0
    for batch in accelerator.skip_first_batches(loader, skip) if skip else loader:
        loss = E.loss_fn(model(batch["x"]), batch["y"])
        run.record(rows=batch["idx"].tolist(), lr=optimizer.param_groups[0]["lr"], loss=loss.item())  # protocol
        accelerator.backward(loss)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
        if run.done():  # protocol
            break  # protocol
    if run.done():  # protocol
        break  # protocol

resumable.finish(eval=E.evaluate(accelerator.unwrap_model(model), x, y))  # protocol: accelerator.save_state
