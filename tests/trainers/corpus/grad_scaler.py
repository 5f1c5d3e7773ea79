"""torch.amp.GradScaler on CPU, in float32: a dynamic loss scale that grows every two clean updates.

    python -B verify_resume.py --output runs/scaler \
        --train-cmd "python -B tests/trainers/corpus/grad_scaler.py --bug lose-scaler"

The scale is a power of two and no gradient overflows, so scaling and unscaling are exact: the
updates, the losses and the weights do not depend on the scale at all. Only the scale itself
(history field `scale`, `state.scaler`) shows a lost scaler, until an overflow would make it matter.

Bug `lose-scaler`: the scaler's state is not saved; the resumed run starts again from the initial
scale and growth tracker. True cause: `scaler`. Parts: model, optimizer, scaler, data, rng-numpy,
rng-torch.
"""

import _corpus
import numpy as np
import torch

from resumeproof import kit

PARTS = ("model", "optimizer", "scaler", "data", "rng-numpy", "rng-torch")
args, flags = _corpus.parse(PARTS, __doc__, bugs=("lose-scaler",))
kit.configure_torch(dtype=torch.float32)

torch.manual_seed(0)
x, y = _corpus.regression(16)
model = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.Tanh(), torch.nn.Dropout(0.2), torch.nn.Linear(8, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
scaler = torch.amp.GradScaler("cpu", init_scale=2.0**6, growth_interval=2)
gens = kit.Generators(numpy=np.random.default_rng(0), torch=torch.default_generator)
order = kit.ShuffledOrder.fresh(16, gens["numpy"])
step, history = 0, []

if args.resume:
    ckpt = kit.load_checkpoint(args.resume)
    for part, thing in (("model", model), ("optimizer", optimizer), ("data", order)):
        if part not in args.omit:
            thing.load_state_dict(ckpt[part])
    if "scaler" not in args.omit and flags.bug is None:
        scaler.load_state_dict(ckpt["scaler"])
    step, history = ckpt["step"], ckpt["history"]
    gens.restore(ckpt["rng"], [n for n in gens.names if f"rng-{n}" not in args.omit])

for _ in range(args.steps):
    rows = order.take(4, gens["numpy"])
    lr, scale = optimizer.param_groups[0]["lr"], scaler.get_scale()
    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x[rows]), y[rows])
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    step += 1
    history.append(kit.record(step, rows, lr, loss.item(), scale=scale))

args.output.mkdir(parents=True)
ckpt = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "data": order.state_dict()}
if flags.bug is None:
    ckpt["scaler"] = scaler.state_dict()
kit.save_checkpoint(args.output / "checkpoint.pt", ckpt | {"rng": gens.state(), "step": step, "history": history})
kit.write_summary(
    args.output,
    step=step,
    history=history,
    state={"model": model.state_dict(), "optimizer": optimizer.state_dict(), "scaler": scaler.state_dict()},
    next={"lr": optimizer.param_groups[0]["lr"], "rng": gens.peek()},
    eval={"mse": torch.nn.functional.mse_loss(model.eval()(x), y).item()},
    meta=_corpus.meta(args, PARTS),
)
