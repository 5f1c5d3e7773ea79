"""A Megatron-style loop: consumed-samples data position, a batch sampler seeded per epoch, RNG restored at load.

    python -B verify_resume.py --output runs/iterator \
        --train-cmd "python -B tests/trainers/corpus_other/iterator_after_restore.py --bug iter-after-restore"

No resumeproof (tests/trainers/corpus_other/_plain.py). The data position is the number of samples consumed; the
batch sampler draws each epoch's permutation from a generator seeded with `seed + epoch` and skips the consumed
samples by index, so nothing but that count needs saving. The DataLoader has no generator of its own: creating its
iterator draws the workers' base seed from torch's global generator, which also draws the dropout masks.

The correct resume loads the checkpoint, builds the training iterator at the consumed samples, and restores the
random generators last, right before the loop.

Bug `iter-after-restore` (Megatron-Bridge's and transformers' bug): `load_checkpoint()` restores the generators with
everything else, and the training iterator is built afterwards; its base-seed draw consumes the restored torch
generator, so every dropout mask after the resume is shifted by one draw. True cause: `rng-torch` (restored, then
drawn from before its first use). Parts: params, optimizer, consumed-samples, rng-torch.
"""

import _plain
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

PARTS = ("params", "optimizer", "consumed-samples", "rng-torch")
SEED, MICRO_BATCH, SAMPLES = 1234, 4, 20


class RandomBatchSampler:
    """Batches of `MICRO_BATCH` indices from `consumed` on; epoch e's permutation from a generator seeded SEED + e."""

    def __init__(self, total: int, consumed: int) -> None:
        self.total, self.consumed = total, consumed

    def __iter__(self):
        while True:
            epoch, offset = divmod(self.consumed, self.total)
            g = torch.Generator().manual_seed(SEED + epoch)
            order = torch.randperm(self.total, generator=g).tolist()
            for start in range(offset, self.total - MICRO_BATCH + 1, MICRO_BATCH):
                self.consumed += MICRO_BATCH
                yield order[start : start + MICRO_BATCH]


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(3, 16), nn.Linear(16, 1)

    def forward(self, x):
        return self.fc2(F.dropout(torch.tanh(self.fc1(x)), p=0.2, training=self.training))


def load_checkpoint(path, model, optimizer, args, restore_rng: bool) -> tuple[int, int, list]:
    """Model, optimizer and position from `path`; the generators too when `restore_rng` (Megatron does it here)."""
    state = _plain.load(path)
    if _plain.restore(args, "params"):
        model.load_state_dict(state["model"])
    if _plain.restore(args, "optimizer"):
        optimizer.load_state_dict(state["optimizer"])
    consumed = state["consumed_samples"] if _plain.restore(args, "consumed-samples") else 0
    if restore_rng:
        restore_rng_state(state, args)
    return state["iteration"], consumed, state["history"]


def restore_rng_state(state, args) -> None:
    if _plain.restore(args, "rng-torch"):
        torch.set_rng_state(state["rng_state"]["torch"])


args = _plain.get_args(__doc__, PARTS, bugs=("iter-after-restore",))
torch.set_num_threads(1)
torch.set_default_dtype(torch.float64)
torch.manual_seed(SEED)

x = torch.linspace(-1, 1, SAMPLES * 3).reshape(SAMPLES, 3)
y = (x[:, :1] * x[:, 1:2] - x[:, 2:] + 0.1 * torch.cos(4 * x[:, :1])).reshape(SAMPLES, 1)
dataset = TensorDataset(torch.arange(SAMPLES), x, y)
model = Net()
optimizer = torch.optim.AdamW(model.parameters(), lr=0.01, weight_decay=0.01)

iteration, consumed, history = 0, 0, []
if args.resume:
    iteration, consumed, history = load_checkpoint(
        args.resume, model, optimizer, args, restore_rng=args.bug == "iter-after-restore"
    )
sampler = RandomBatchSampler(SAMPLES, consumed)
train_iterator = iter(DataLoader(dataset, batch_sampler=sampler))
if args.resume and args.bug is None:
    restore_rng_state(_plain.load(args.resume), args)  # last: building the iterator drew from the global generator

for _ in range(args.steps):
    idx, xb, yb = next(train_iterator)
    model.train()
    loss = F.mse_loss(model(xb), yb)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    iteration += 1
    history.append(
        {"step": iteration, "rows": idx.tolist(), "lr": optimizer.param_groups[0]["lr"], "loss": loss.item()}
    )

consumed = sampler.consumed
_plain.save(
    {
        "iteration": iteration,
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "consumed_samples": consumed,
        "rng_state": {"torch": torch.get_rng_state()},
        "history": history,
    },
    args.output / "checkpoint.pt",
)
model.eval()
with torch.no_grad():
    predictions = model(x)
_plain.write_summary(
    args,
    PARTS,
    step=iteration,
    history=history,
    state={"model": model.state_dict(), "optimizer": optimizer.state_dict(), "consumed_samples": consumed},
    next={"lr": optimizer.param_groups[0]["lr"], "rng": {"torch": _plain.peek()}},
    eval={"mse": F.mse_loss(predictions, y).item(), "predictions": predictions[:, 0]},
)
