"""A kit-based trainer whose configuration is plain flags of its own, for `resumeproof fork` beside the reference's
`--pivot`: `--lr V` sets Adam's learning rate from this process on (the restored moments kept), a change of
configuration alone; `--seed S` seeds torch's generator after the restore, as a loop that seeds on every start does,
so its dropout masks are no longer the checkpoint's: a change of configuration that also changes the state the next
update starts from. A fork of the first is fair, one of the second is not (tests/e2e/test_fork_e2e.py).
"""

import argparse

import numpy as np
import torch
from _tiny import data, model, update

from resumeproof import kit

PARTS = ("model", "optimizer", "data", "rng-numpy", "rng-torch")

parser = argparse.ArgumentParser(allow_abbrev=False)
kit.flags.add_arguments(parser, PARTS)
parser.add_argument("--lr", type=float, help="Adam's learning rate from this process on (default: 0.05, or restored).")
parser.add_argument("--seed", type=int, help="Seed torch's generator after the restore.")
given = parser.parse_args()
args = kit.flags.from_namespace(given, PARTS)
kit.refuse_existing(args.output)
kit.configure_torch()

x, y = data(16)
net = model()  # seeds torch's generator with 0, then draws the initial weights
optimizer = torch.optim.Adam(net.parameters(), lr=0.05)
gens = kit.Generators(numpy=np.random.default_rng(0), torch=torch.default_generator)  # dropout draws from torch's
order = kit.ShuffledOrder.fresh(16, gens["numpy"])
step, history = 0, []

if args.resume:
    state = kit.load_checkpoint(args.resume)
    for part, thing in (("model", net), ("optimizer", optimizer), ("data", order)):
        if part not in args.omit:
            thing.load_state_dict(state[part])
    step, history = state["step"], state["history"]
    gens.restore(state["rng"], args.restored_generators(gens.names))
if given.lr is not None:
    for group in optimizer.param_groups:
        group["lr"] = given.lr
if given.seed is not None:
    torch.manual_seed(given.seed)

for _ in range(args.steps):
    rows = order.take(4, gens["numpy"])
    lr, loss = update(net, optimizer, x, y, rows)
    step += 1
    history.append(kit.record(step, rows, lr, loss))

args.output.mkdir(parents=True)
state = {"model": net.state_dict(), "optimizer": optimizer.state_dict(), "data": order.state_dict()}
kit.save_checkpoint(args.output / "checkpoint.pt", state | {"rng": gens.state(), "step": step, "history": history})
kit.write_summary(
    args.output,
    step=step,
    history=history,
    state=state,
    next={"lr": optimizer.param_groups[0]["lr"], "rng": gens.peek()},
    eval={"mse": torch.nn.functional.mse_loss(net.eval()(x), y).item()},
    meta=args.meta(),
)
