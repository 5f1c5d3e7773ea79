"""Regression through a DataLoader with two worker processes and random augmentation drawn in the Dataset.

    python -B verify_resume.py --output runs/augment \
        --train-cmd "python -B tests/trainers/corpus_other/workers_augment.py --bug skip-indices"

No resumeproof: the protocol by hand (tests/trainers/corpus_other/_plain.py), the loop in the style of the
PyTorch tutorials. The Dataset flips each input's sign at random and adds noise, drawn from torch's generator of the
worker that fetches the item. Each epoch's iterator draws its workers' base seed from the loader's generator (worker
i seeds itself with base + i), and the sampler the epoch's permutation from the same generator; batch j of an epoch
is fetched by worker j % 2. The correct resume saves the loader's generator as it was before the epoch's iterator
was created, rebuilds the iterator from it and fetches and drops the batches already trained, so that every worker
makes the draws it made in the first run.

Bugs (true cause `loader` for both):
- `skip-indices`: the epoch's permutation is rebuilt right but the trained batches are skipped in the sampler, never
  fetched (index-level skipping): the first resumed batch is fetched by worker 0 with a fresh generator, where the
  first run's worker had already drawn for the batches before it.
- `live-generator`: the checkpoint holds the loader generator as it is at save time, after the epoch's iterator drew
  from it; the resumed iterator draws another permutation and other worker seeds from it.

Parts: weights, optim, loader (epoch, batches taken, the loader's generator), rng-torch (dropout).
"""

import _plain
import torch
from torch import nn
from torch.utils.data import DataLoader, Dataset, Sampler

PARTS = ("weights", "optim", "loader", "rng-torch")
BATCH = 4


class Augmented(Dataset):
    def __init__(self, n: int) -> None:
        self.x = torch.linspace(-1, 1, 2 * n).reshape(n, 2)
        self.y = self.x[:, :1] - 2 * self.x[:, 1:] + 0.3 * torch.sin(3 * self.x[:, :1])

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int):
        sign = 1.0 if torch.rand(()) < 0.5 else -1.0  # the worker's generator
        x = sign * self.x[i] + 0.05 * torch.randn(2)
        return i, x, sign * self.y[i]


class EpochSampler(Sampler[int]):
    """A random permutation per epoch; `start` skips that many indices of the next one (index-level skipping)."""

    def __init__(self, n: int, generator: torch.Generator) -> None:
        self.n, self.generator, self.start = n, generator, 0

    def __len__(self) -> int:
        return self.n

    def __iter__(self):
        order = torch.randperm(self.n, generator=self.generator).tolist()
        start, self.start = self.start, 0
        yield from order[start:]


args = _plain.get_args(__doc__, PARTS, bugs=("skip-indices", "live-generator"))
torch.set_num_threads(1)
torch.set_default_dtype(torch.float64)
torch.manual_seed(0)

data = Augmented(16)
loader_gen = torch.Generator().manual_seed(1234)
sampler = EpochSampler(len(data), loader_gen)
loader = DataLoader(data, batch_size=BATCH, sampler=sampler, num_workers=2, generator=loader_gen)
model = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Dropout(0.1), nn.Linear(16, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=0.02)

global_step, epoch, batches_done, history = 0, 0, 0, []
if args.resume:
    ckpt = _plain.load(args.resume)
    if _plain.restore(args, "weights"):
        model.load_state_dict(ckpt["model_state_dict"])
    if _plain.restore(args, "optim"):
        optimizer.load_state_dict(ckpt["optimizer_state_dict"])
    if _plain.restore(args, "loader"):
        epoch, batches_done = ckpt["epoch"], ckpt["batches_done"]
        loader_gen.set_state(ckpt["loader_generator"])
    if _plain.restore(args, "rng-torch"):
        torch.set_rng_state(ckpt["torch_rng"])
    global_step, history = ckpt["global_step"], ckpt["history"]

epoch_start_state = loader_gen.get_state()
if args.bug == "skip-indices":
    sampler.start = batches_done * BATCH
    data_iter = iter(loader)
else:
    data_iter = iter(loader)
    for _ in range(batches_done):  # the workers redo the draws of the batches already trained
        next(data_iter)

end = global_step + args.steps
while global_step < end:
    if batches_done == len(loader):
        epoch, batches_done = epoch + 1, 0
        epoch_start_state = loader_gen.get_state()
        data_iter = iter(loader)
    idx, xb, yb = next(data_iter)
    batches_done += 1
    model.train()
    optimizer.zero_grad()
    loss = nn.functional.mse_loss(model(xb), yb)
    loss.backward()
    optimizer.step()
    global_step += 1
    history.append(
        {"step": global_step, "rows": idx.tolist(), "lr": optimizer.param_groups[0]["lr"], "loss": loss.item()}
    )

saved_generator = loader_gen.get_state() if args.bug == "live-generator" else epoch_start_state
_plain.save(
    {
        "model_state_dict": model.state_dict(),
        "optimizer_state_dict": optimizer.state_dict(),
        "epoch": epoch,
        "batches_done": batches_done,
        "loader_generator": saved_generator,
        "torch_rng": torch.get_rng_state(),
        "global_step": global_step,
        "history": history,
    },
    args.output / "checkpoint.pt",
)
model.eval()
with torch.no_grad():
    mse = nn.functional.mse_loss(model(data.x), data.y).item()
_plain.write_summary(
    args,
    PARTS,
    step=global_step,
    history=history,
    state={"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch, "batch": batches_done},
    next={"lr": optimizer.param_groups[0]["lr"], "rng": {"torch": _plain.peek(), "loader": _plain.peek(loader_gen)}},
    eval={"mse": mse},
)
