"""A loop that is exact for its first five updates and depends on the process from the sixth on.

    python -B verify_resume.py --output runs/late \
        --train-cmd "python -B tests/trainers/corpus/late_nondeterminism.py --bug hash-order"

After a warm-up of five shuffled updates, the loop switches on something that is not a function
of the checkpoint (run with PYTHONHASHSEED unset, as Python runs by default):
- `hash-order`: class-balanced sampling, each update drawing its batch from the next class in the
  iteration order of the *set* of class names, which depends on the per-process hash seed;
- `unseeded-noise`: annealed gradient noise from a generator created without a seed; the
  checkpoint saves and restores it exactly, but no two fresh runs share its stream.

With the default k = 5, the interrupted run is a prefix of the continuous one and the resume
differs from the first resumed update on: the true verdict is "not deterministic", and no part
was lost. Without `--bug`: the classes in sorted order, the noise generator seeded. Parts:
model, optimizer, data, rng-numpy, rng-noise, rng-torch.
"""

import _corpus
import numpy as np
import torch

from resumeproof import kit

PARTS = ("model", "optimizer", "data", "rng-numpy", "rng-noise", "rng-torch")
WARMUP, ROWS = 5, 24
CLASSES = {"cat", "dog", "bird", "fish", "frog", "horse", "ship", "truck"}
args, flags = _corpus.parse(PARTS, __doc__, bugs=("hash-order", "unseeded-noise"))
kit.configure_torch()

torch.manual_seed(0)
x, y = _corpus.regression(ROWS)
label = {row: sorted(CLASSES)[row % len(CLASSES)] for row in range(ROWS)}  # three rows per class
classes = list(CLASSES) if flags.bug == "hash-order" else sorted(CLASSES)
model = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.Tanh(), torch.nn.Dropout(0.2), torch.nn.Linear(8, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
noise = np.random.default_rng() if flags.bug == "unseeded-noise" else np.random.default_rng(7)
gens = kit.Generators(numpy=np.random.default_rng(0), noise=noise, torch=torch.default_generator)
order = kit.ShuffledOrder.fresh(ROWS, gens["numpy"])
step, history = 0, []

if args.resume:
    ckpt = kit.load_checkpoint(args.resume)
    for part, thing in (("model", model), ("optimizer", optimizer), ("data", order)):
        if part not in args.omit:
            thing.load_state_dict(ckpt[part])
    step, history = ckpt["step"], ckpt["history"]
    gens.restore(ckpt["rng"], [n for n in gens.names if f"rng-{n}" not in args.omit])

for _ in range(args.steps):
    if step < WARMUP:
        rows = order.take(4, gens["numpy"])
    else:  # class-balanced: the classes in turn, the class's rows in a fresh order
        members = [row for row in range(ROWS) if label[row] == classes[(step - WARMUP) % len(classes)]]
        rows = gens["numpy"].permutation(members).tolist()
    lr = optimizer.param_groups[0]["lr"]
    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x[rows]), y[rows])
    loss.backward()
    if step >= WARMUP:
        for p in model.parameters():
            p.grad += torch.from_numpy(noise.normal(0.0, 0.05 / (1 + step), p.shape))
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
