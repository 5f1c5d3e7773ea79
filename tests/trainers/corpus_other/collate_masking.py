"""A denoising model fed by a collate function that masks inputs at random, the way an MLM data collator does.

    python -B verify_resume.py --output runs/masking \
        --train-cmd "python -B tests/trainers/corpus_other/collate_masking.py --bug restore-then-skip"

No resumeproof (tests/trainers/corpus_other/_plain.py). The collate function draws each batch's mask from torch's
global generator when the batch is fetched (no workers: in the training process), as transformers'
`DataCollatorForLanguageModeling` does; the model reconstructs the masked features and has dropout, from the same
generator. The data position is the epoch, the batches taken in it and the loader generator's state at its start;
the resume rebuilds the epoch's iterator and fetches and drops the batches already trained.

The correct resume restores torch's global generator after that replay, right before the loop.

Bug `restore-then-skip`: the generator is restored with everything else, before the replay, and the masks the
replayed batches draw consume it (what transformers' Trainer avoids by restoring after the skipped batches): the
first resumed batch is masked differently and every dropout mask after it shifts. True cause: `rng-torch`
(restored, then drawn from before its first use). Parts: model, optimizer, data, rng-torch.
"""

import _plain
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

PARTS = ("model", "optimizer", "data", "rng-torch")
MASK_PROB = 0.3


def mask_collate(examples):
    ids = torch.tensor([int(i) for i, _ in examples])
    clean = torch.stack([x for _, x in examples])
    mask = torch.rand(clean.shape) < MASK_PROB  # torch's global generator
    return ids, clean.masked_fill(mask, 0.0), clean, mask


args = _plain.get_args(__doc__, PARTS, bugs=("restore-then-skip",))
torch.set_num_threads(1)
torch.set_default_dtype(torch.float64)
torch.manual_seed(31)

basis = torch.randn(2, 6)
data = torch.tanh(torch.randn(24, 2) @ basis)
shuffle_gen = torch.Generator().manual_seed(31)
loader = DataLoader(
    TensorDataset(torch.arange(24), data), batch_size=4, shuffle=True, generator=shuffle_gen, collate_fn=mask_collate
)
model = nn.Sequential(nn.Linear(6, 12), nn.GELU(), nn.Dropout(0.1), nn.Linear(12, 6))
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)

step, epoch, taken, history, ckpt = 0, 0, 0, [], None
if args.resume:
    ckpt = _plain.load(args.resume)
    if _plain.restore(args, "model"):
        model.load_state_dict(ckpt["model"])
    if _plain.restore(args, "optimizer"):
        optimizer.load_state_dict(ckpt["optimizer"])
    if _plain.restore(args, "data"):
        epoch, taken = ckpt["epoch"], ckpt["taken"]
        shuffle_gen.set_state(ckpt["epoch_start"])
    if args.bug == "restore-then-skip" and _plain.restore(args, "rng-torch"):
        torch.set_rng_state(ckpt["torch_rng"])
    step, history = ckpt["step"], ckpt["history"]

epoch_start = shuffle_gen.get_state()
batches = iter(loader)
for _ in range(taken):
    next(batches)
if ckpt is not None and args.bug is None and _plain.restore(args, "rng-torch"):
    torch.set_rng_state(ckpt["torch_rng"])

for _ in range(args.steps):
    if taken == len(loader):
        epoch, taken, epoch_start = epoch + 1, 0, shuffle_gen.get_state()
        batches = iter(loader)
    ids, noisy, clean, mask = next(batches)
    taken += 1
    model.train()
    optimizer.zero_grad()
    loss = ((model(noisy) - clean) ** 2 * mask).sum() / mask.sum().clamp(min=1)
    loss.backward()
    optimizer.step()
    step += 1
    history.append({"step": step, "rows": ids.tolist(), "lr": optimizer.param_groups[0]["lr"], "loss": loss.item()})

state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch, "taken": taken}
_plain.save(
    state | {"epoch_start": epoch_start, "torch_rng": torch.get_rng_state(), "step": step, "history": history},
    args.output / "checkpoint.pt",
)
model.eval()
with torch.no_grad():
    mse = nn.functional.mse_loss(model(data), data).item()
_plain.write_summary(
    args,
    PARTS,
    step=step,
    history=history,
    state=state,
    next={"lr": optimizer.param_groups[0]["lr"], "rng": {"torch": _plain.peek(), "shuffle": _plain.peek(shuffle_gen)}},
    eval={"mse": mse},
)
