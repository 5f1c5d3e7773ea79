"""An EMA of the weights through torch.optim.swa_utils.AveragedModel, swapped into the model for evaluation.

    python -B verify_resume.py --output runs/swa-ema \
        --train-cmd "python -B tests/trainers/corpus_other/swa_ema.py --bug save-swapped"

Built on the kit in its own layout (keys `net`, `opt`, `swa`, `order`, `rngs`, `it`, `records`). The average is
updated after every update (`get_ema_multi_avg_fn(0.9)`) and evaluated the way diffusers' EMAModel is: the
model's weights are stored, the averaged ones copied into the model, the model evaluated, and its weights put
back. The correct run writes its checkpoint before that swap.

Bugs:
- `save-swapped`: the checkpoint is written inside the swap ("the inference weights go with it"), so `net` holds
  the averaged weights and the resumed run trains from them. True cause: `net`.
- `half-precision-ema`: the average is saved in float16 to halve the file, as YOLOv5 saves its EMA, and loaded
  back into the float64 average: every averaged weight is rounded. True cause: `swa`.
Parts: net, opt, swa, order, rng-shuffle (NumPy, the epochs' permutations), rng-torch (dropout).
"""

import argparse

import numpy as np
import torch
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn

from resumeproof import kit

PARTS = ("net", "opt", "swa", "order", "rng-shuffle", "rng-torch")
parser = argparse.ArgumentParser(description=__doc__, allow_abbrev=False)
kit.flags.add_arguments(parser, PARTS)
parser.add_argument("--bug", choices=("save-swapped", "half-precision-ema"))
ns = parser.parse_args()
args = kit.flags.from_namespace(ns, PARTS)
kit.refuse_existing(args.output)
kit.configure_torch()

torch.manual_seed(21)
inputs = torch.randn(24, 3)
labels = torch.tanh(inputs.sum(1, keepdim=True)) + 0.05 * inputs[:, :1] ** 2
net = torch.nn.Sequential(torch.nn.Linear(3, 10), torch.nn.Tanh(), torch.nn.Dropout(0.2), torch.nn.Linear(10, 1))
opt = torch.optim.Adam(net.parameters(), lr=0.03, betas=(0.8, 0.99))
swa = AveragedModel(net, multi_avg_fn=get_ema_multi_avg_fn(0.9))
rngs = kit.Generators(shuffle=np.random.default_rng(8), torch=torch.default_generator)
order = kit.ShuffledOrder.fresh(24, rngs["shuffle"])
it, records = 0, []

if args.resume:
    ckpt = kit.load_checkpoint(args.resume)
    for key, obj in (("net", net), ("opt", opt), ("order", order)):
        if key not in args.omit:
            obj.load_state_dict(ckpt[key])
    if "swa" not in args.omit:
        swa.load_state_dict({k: v.to(torch.float64) if v.is_floating_point() else v for k, v in ckpt["swa"].items()})
    it, records = ckpt["it"], ckpt["records"]
    rngs.restore(ckpt["rngs"], args.restored_generators(rngs.names))

for _ in range(args.steps):
    rows = order.take(6, rngs["shuffle"])
    lr = opt.param_groups[0]["lr"]
    net.train()
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(net(inputs[rows]), labels[rows])
    loss.backward()
    opt.step()
    swa.update_parameters(net)
    it += 1
    records.append(kit.record(it, rows, lr, loss.item()))


def checkpoint() -> None:
    ema = swa.state_dict()
    if ns.bug == "half-precision-ema":
        ema = {k: v.half() if v.is_floating_point() else v for k, v in ema.items()}
    ckpt = {"net": net.state_dict(), "opt": opt.state_dict(), "swa": ema, "order": order.state_dict()}
    kit.save_checkpoint(args.output / "checkpoint.pt", ckpt | {"rngs": rngs.state(), "it": it, "records": records})


args.output.mkdir(parents=True)
if ns.bug != "save-swapped":
    checkpoint()
stored = [p.detach().clone() for p in net.parameters()]
with torch.no_grad():
    for p, averaged in zip(net.parameters(), swa.module.parameters(), strict=True):
        p.copy_(averaged)
    if ns.bug == "save-swapped":
        checkpoint()
    net.eval()
    ema_mse = torch.nn.functional.mse_loss(net(inputs), labels).item()
    for p, kept in zip(net.parameters(), stored, strict=True):
        p.copy_(kept)
    mse = torch.nn.functional.mse_loss(net(inputs), labels).item()
kit.write_summary(
    args.output,
    step=it,
    history=records,
    state={"net": net.state_dict(), "opt": opt.state_dict(), "swa": swa.state_dict(), "order": order.state_dict()},
    next={"lr": opt.param_groups[0]["lr"], "rng": rngs.peek()},
    eval={"mse": mse, "ema_mse": ema_mse},
    meta=args.meta(),
)
