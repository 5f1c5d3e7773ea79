"""Three generators (data order, augmentation, dropout), their next draws reported under `next.draws`, not `next.rng`.

    python -B verify_resume.py --output runs/draws \
        --train-cmd "python -B tests/trainers/corpus/next_draws_key.py --bug lose-numpy"

The protocol asks for the next draw of every generator in `next` and does not name the key:
this loop reports them as `next.draws.{order,numpy,torch}`.

Bug `lose-numpy`: the augmentation generator (NumPy, added to the loop after the others) is left
out of the restore list: the resumed run draws other input noise. True cause: `rng-numpy`.
Parts: model, optimizer, data, rng-order, rng-numpy, rng-torch.
"""

import _corpus
import numpy as np
import torch

from resumeproof import kit

PARTS = ("model", "optimizer", "data", "rng-order", "rng-numpy", "rng-torch")
args, flags = _corpus.parse(PARTS, __doc__, bugs=("lose-numpy",))
kit.configure_torch()

torch.manual_seed(0)
x, y = _corpus.regression(16)
model = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.Tanh(), torch.nn.Dropout(0.2), torch.nn.Linear(8, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
gens = kit.Generators(order=np.random.default_rng(0), numpy=np.random.default_rng(1), torch=torch.default_generator)
order = kit.ShuffledOrder.fresh(16, gens["order"])
step, history = 0, []

if args.resume:
    ckpt = kit.load_checkpoint(args.resume)
    for part, thing in (("model", model), ("optimizer", optimizer), ("data", order)):
        if part not in args.omit:
            thing.load_state_dict(ckpt[part])
    step, history = ckpt["step"], ckpt["history"]
    restored = ["order", "torch"] if flags.bug == "lose-numpy" else gens.names  # the bug: numpy came later
    gens.restore(ckpt["rng"], [n for n in restored if f"rng-{n}" not in args.omit])

for _ in range(args.steps):
    rows = order.take(4, gens["order"])
    noisy = x[rows] + torch.from_numpy(gens["numpy"].normal(0.0, 0.05, (len(rows), 2)))
    lr = optimizer.param_groups[0]["lr"]
    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(model(noisy), y[rows])
    loss.backward()
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
    next={"lr": optimizer.param_groups[0]["lr"], "draws": gens.peek()},
    eval={"mse": torch.nn.functional.mse_loss(model.eval()(x), y).item()},
    meta=_corpus.meta(args, PARTS),
)
