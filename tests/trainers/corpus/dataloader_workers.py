"""A DataLoader with two worker processes, shuffling, and random augmentation drawn inside the Dataset.

    python -B verify_resume.py --output runs/workers \
        --train-cmd "python -B tests/trainers/corpus/dataloader_workers.py --bug lose-loader-generator"

Each epoch's iterator draws, from the loader's generator, the workers' base seed (worker i seeds
its torch generator with base + i, and the Dataset's jitter draws from it) and the epoch's
permutation. The exact resume saves that generator's state *as the epoch's iterator started*
with the number of batches taken, rebuilds the iterator from it and fetches past the taken
batches: the same workers, seeds and permutation, so the same jitter.

Bug `lose-loader-generator`: the checkpoint holds the epoch and the batch index but not the
loader's generator; the resumed epoch starts from the freshly seeded generator: another
permutation and other worker seeds. True cause: `rng-loader`. Parts: model, optimizer, data
(epoch and batch index), rng-loader.
"""

import _corpus
import torch
from torch.utils.data import DataLoader, Dataset

from resumeproof import kit

PARTS = ("model", "optimizer", "data", "rng-loader")
args, flags = _corpus.parse(PARTS, __doc__, bugs=("lose-loader-generator",))
kit.configure_torch()


class Jittered(Dataset):
    """Rows with Gaussian input noise, drawn in the worker that fetches them."""

    def __init__(self, x: torch.Tensor, y: torch.Tensor) -> None:
        self.x, self.y = x, y

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int) -> tuple[int, torch.Tensor, torch.Tensor]:
        return i, self.x[i] + 0.05 * torch.randn(2), self.y[i]  # the worker's generator: base seed + worker id


torch.manual_seed(0)
x, y = _corpus.regression(16)
model = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
shuffle = torch.Generator().manual_seed(1)
loader = DataLoader(Jittered(x, y), batch_size=4, shuffle=True, num_workers=2, generator=shuffle)
gens = kit.Generators(loader=shuffle)  # peeked in next.rng: the draw the next epoch's iterator would make
epoch, taken, step, history = 0, 0, 0, []

if args.resume:
    ckpt = kit.load_checkpoint(args.resume)
    if "model" not in args.omit:
        model.load_state_dict(ckpt["weights"])
    if "optimizer" not in args.omit:
        optimizer.load_state_dict(ckpt["sgd"])
    if "data" not in args.omit:
        epoch, taken = ckpt["epoch"], ckpt["taken"]
    if "rng-loader" not in args.omit and flags.bug is None:
        shuffle.set_state(ckpt["epoch_start"])
    step, history = ckpt["step"], ckpt["history"]
epoch_start = shuffle.get_state()
batches = iter(loader)
for _ in range(taken):  # fetched again and dropped: the workers replay the same draws
    next(batches)

for _ in range(args.steps):
    if taken == len(loader):
        epoch, taken, epoch_start = epoch + 1, 0, shuffle.get_state()
        batches = iter(loader)
    ids, xb, yb = next(batches)
    taken += 1
    lr = optimizer.param_groups[0]["lr"]
    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(model(xb), yb)
    loss.backward()
    optimizer.step()
    step += 1
    history.append(kit.record(step, ids.tolist(), lr, loss.item()))

args.output.mkdir(parents=True)
ckpt = {"weights": model.state_dict(), "sgd": optimizer.state_dict(), "epoch": epoch, "taken": taken}
if flags.bug is None:
    ckpt["epoch_start"] = epoch_start
kit.save_checkpoint(args.output / "checkpoint.pt", ckpt | {"step": step, "history": history})
kit.write_summary(
    args.output,
    step=step,
    history=history,
    state={"weights": model.state_dict(), "sgd": optimizer.state_dict(), "position": {"epoch": epoch, "taken": taken}},
    next={"lr": optimizer.param_groups[0]["lr"], "rng": gens.peek()},
    eval={"mse": torch.nn.functional.mse_loss(model(x), y).item()},
    meta=_corpus.meta(args, PARTS),
)
