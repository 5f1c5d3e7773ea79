"""A linear warm-up chained with a cosine decay, two schedulers stepped one after the other (PyTorch's chaining).

    python -B verify_resume.py --output runs/warmup-cosine \
        --train-cmd "python -B tests/trainers/corpus_other/warmup_cosine.py --bug lose-warmup"

Built on the kit in its own layout: the checkpoint keys are `net`, `opt`, `warmup`, `cosine`, `order`, `gens`,
`step`, `log`. The two schedulers are chained the way torch's LR scheduler documentation shows: both built on the
same optimizer and both stepped after every update, each multiplying the lr the other left (LinearLR from 0.1 of
the base lr over 4 updates, CosineAnnealingLR over 30).

Bug `lose-warmup`: only the cosine scheduler is saved ("the warm-up is over by then"). The resumed run rebuilds
LinearLR, which runs its 4 updates again on the restored lr: each resumed update multiplies the lr on, until it
is ten times the continuous run's. True cause: `warmup`. Parts: net, opt, warmup, cosine, order, rng-order
(NumPy, the epochs' permutations), rng-torch (dropout).
"""

import argparse

import numpy as np
import torch
from torch.optim.lr_scheduler import CosineAnnealingLR, LinearLR

from resumeproof import kit

PARTS = ("net", "opt", "warmup", "cosine", "order", "rng-order", "rng-torch")
parser = argparse.ArgumentParser(description=__doc__, allow_abbrev=False)
kit.flags.add_arguments(parser, PARTS)
parser.add_argument("--bug", choices=("lose-warmup",))
ns = parser.parse_args()
args = kit.flags.from_namespace(ns, PARTS)
kit.refuse_existing(args.output)
kit.configure_torch()

torch.manual_seed(3)
features = torch.randn(20, 4)
target = features @ torch.tensor([[0.5], [-1.0], [0.25], [2.0]]) + 0.1 * torch.randn(20, 1)
net = torch.nn.Sequential(torch.nn.Linear(4, 12), torch.nn.SiLU(), torch.nn.Dropout(0.15), torch.nn.Linear(12, 1))
opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.8, nesterov=True)
warmup = LinearLR(opt, start_factor=0.1, total_iters=4)
cosine = CosineAnnealingLR(opt, T_max=30)
gens = kit.Generators(order=np.random.default_rng(11), torch=torch.default_generator)
order = kit.ShuffledOrder.fresh(20, gens["order"])
step, log = 0, []

if args.resume:
    ckpt = kit.load_checkpoint(args.resume)
    restorable = [("net", net), ("opt", opt), ("cosine", cosine), ("order", order)]
    if ns.bug is None:
        restorable.append(("warmup", warmup))
    for key, obj in restorable:
        if key not in args.omit:
            obj.load_state_dict(ckpt[key])
    step, log = ckpt["step"], ckpt["log"]
    gens.restore(ckpt["gens"], args.restored_generators(gens.names))

for _ in range(args.steps):
    rows = order.take(5, gens["order"])
    lr = opt.param_groups[0]["lr"]
    net.train()
    loss = torch.nn.functional.smooth_l1_loss(net(features[rows]), target[rows])
    opt.zero_grad()
    loss.backward()
    opt.step()
    warmup.step()
    cosine.step()
    step += 1
    log.append(kit.record(step, rows, lr, loss.item()))

ckpt = {"net": net.state_dict(), "opt": opt.state_dict(), "cosine": cosine.state_dict(), "order": order.state_dict()}
if ns.bug is None:
    ckpt["warmup"] = warmup.state_dict()
ckpt |= {"gens": gens.state(), "step": step, "log": log}
args.output.mkdir(parents=True)
kit.save_checkpoint(args.output / "checkpoint.pt", ckpt)
net.eval()
with torch.no_grad():
    mse = torch.nn.functional.mse_loss(net(features), target).item()
kit.write_summary(
    args.output,
    step=step,
    history=log,
    state={
        "net": net.state_dict(),
        "opt": opt.state_dict(),
        "cosine": cosine.state_dict(),
        "order": order.state_dict(),
    },
    next={"lr": opt.param_groups[0]["lr"], "rng": gens.peek()},
    eval={"mse": mse},
    meta=args.meta(),
)
