"""Gradient accumulation over three micro-batches per update, the data position kept as a micro-step counter.

    python -B verify_resume.py --output runs/accum \
        --train-cmd "python -B tests/trainers/corpus/grad_accum.py --bug lose-micro-step"

`micro_step` counts the micro-batches consumed since the start: it picks the next micro-batch
(epoch = micro_step // 12, each epoch a permutation seeded by its number) and says when an
update is due. Every history record carries it as the field `micro_step`.

Bug `lose-micro-step`: the checkpoint saves the update count (`step`) but not `micro_step`; the
resumed run starts the data from micro-batch 0 again. True cause: `micro-step`. Parts: model,
optimizer, micro-step, rng-torch.
"""

import _corpus
import numpy as np
import torch

from resumeproof import kit

PARTS = ("model", "optimizer", "micro-step", "rng-torch")
ACCUM, MICRO, ROWS = 3, 2, 24  # micro-batches per update, rows per micro-batch, rows in the data set
args, flags = _corpus.parse(PARTS, __doc__, bugs=("lose-micro-step",))
kit.configure_torch()

torch.manual_seed(0)
x, y = _corpus.regression(ROWS)
model = torch.nn.Sequential(torch.nn.Linear(2, 16), torch.nn.Tanh(), torch.nn.Dropout(0.1), torch.nn.Linear(16, 1))
optimizer = torch.optim.AdamW(model.parameters(), lr=0.02, weight_decay=0.01)
gens = kit.Generators(torch=torch.default_generator)


def micro_batch(micro_step: int) -> list[int]:
    per_epoch = ROWS // MICRO
    epoch, i = divmod(micro_step, per_epoch)
    order = np.random.default_rng(epoch).permutation(ROWS).tolist()  # a pure function of the epoch
    return order[i * MICRO : (i + 1) * MICRO]


step, micro_step, history = 0, 0, []
if args.resume:
    ckpt = kit.load_checkpoint(args.resume)
    if "model" not in args.omit:
        model.load_state_dict(ckpt["model"])
    if "optimizer" not in args.omit:
        optimizer.load_state_dict(ckpt["optimizer"])
    if "micro-step" not in args.omit and flags.bug is None:
        micro_step = ckpt["micro_step"]
    step, history = ckpt["step"], ckpt["history"]
    gens.restore(ckpt["rng"], [n for n in gens.names if f"rng-{n}" not in args.omit])

optimizer.zero_grad()
rows, losses = [], []
while len(history) < step + args.steps or rows:
    ids = micro_batch(micro_step)
    loss = torch.nn.functional.mse_loss(model(x[ids]), y[ids])
    (loss / ACCUM).backward()
    rows, losses, micro_step = rows + ids, [*losses, loss.item()], micro_step + 1
    if micro_step % ACCUM == 0:
        lr = optimizer.param_groups[0]["lr"]
        optimizer.step()
        optimizer.zero_grad()
        history.append(kit.record(len(history) + 1, rows, lr, sum(losses) / ACCUM, micro_step=micro_step))
        rows, losses = [], []
step = len(history)

args.output.mkdir(parents=True)
ckpt = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "rng": gens.state()}
if flags.bug is None:
    ckpt["micro_step"] = micro_step
kit.save_checkpoint(args.output / "checkpoint.pt", ckpt | {"step": step, "history": history})
kit.write_summary(
    args.output,
    step=step,
    history=history,
    state={"model": model.state_dict(), "optimizer": optimizer.state_dict(), "micro_step": micro_step},
    next={"lr": optimizer.param_groups[0]["lr"], "rng": gens.peek()},
    eval={"mse": torch.nn.functional.mse_loss(model.eval()(x), y).item()},
    meta=_corpus.meta(args, PARTS),
)
