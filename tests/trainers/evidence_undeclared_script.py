"""undeclared_parts.py as a plain script with no thought of resumeproof, verified with `--observe`: the same bugs
must be named by the same parts (`scaler`, `ema`) whichever way the loop is verified.

    resumeproof verify --observe --output runs/undeclared-script --steps 8 --interrupt-at 4 \\
      --train-cmd  "python -B tests/trainers/evidence_undeclared_script.py --iters {steps} --out {run}" \\
      --resume-cmd "python -B tests/trainers/evidence_undeclared_script.py --iters {steps} --out {run} \\
                    --resume {checkpoint} --bug lose-ema" \\
      --checkpoint "{run}/ckpt_{step}.pt"

A checkpoint per update, a dict under other keys than the kit's (`net`, `opt`, `amp`, `avg`). Bugs: `lose-scaler`,
`lose-ema`, `ema-strict-false` (the EMA loaded under keys that match nothing, with strict=False).
"""

import argparse
import os

import numpy as np
import torch
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn

p = argparse.ArgumentParser()
p.add_argument("--iters", type=int, required=True)
p.add_argument("--out", required=True)
p.add_argument("--resume")
p.add_argument("--bug", choices=("lose-scaler", "lose-ema", "ema-strict-false"))
args = p.parse_args()

torch.set_num_threads(1)
torch.set_default_dtype(torch.float64)
torch.manual_seed(0)
os.makedirs(args.out, exist_ok=True)
x = torch.linspace(-1, 1, 32).reshape(16, 2)
y = x[:, :1] - 2 * x[:, 1:] + 0.3 * torch.sin(3 * x[:, :1])
net = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.Tanh(), torch.nn.Dropout(0.2), torch.nn.Linear(8, 1))
opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
amp = torch.amp.GradScaler("cpu", init_scale=2.0**6, growth_interval=2)
avg = AveragedModel(net, multi_avg_fn=get_ema_multi_avg_fn(0.9))
shuffle = np.random.default_rng(0)
perm, cursor, it = shuffle.permutation(16), 0, 0

if args.resume:
    ckpt = torch.load(args.resume, weights_only=False)
    net.load_state_dict(ckpt["net"])
    opt.load_state_dict(ckpt["opt"])
    if args.bug != "lose-scaler":
        amp.load_state_dict(ckpt["amp"])
    if args.bug == "ema-strict-false":  # saved as `avg.*` by another version: strict=False loads none of it
        avg.load_state_dict({f"avg.{k}": v for k, v in ckpt["avg"].items()}, strict=False)
    elif args.bug != "lose-ema":
        avg.load_state_dict(ckpt["avg"])
    perm, cursor, it = ckpt["perm"], ckpt["cursor"], ckpt["iter"]
    shuffle.bit_generator.state = ckpt["shuffle"]
    torch.set_rng_state(ckpt["torch_rng"])

while it < args.iters:
    if cursor == len(perm):
        perm, cursor = shuffle.permutation(16), 0
    rows = torch.from_numpy(perm[cursor : cursor + 4])
    cursor += 4
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(net(x[rows]), y[rows])
    amp.scale(loss).backward()
    amp.step(opt)
    amp.update()
    avg.update_parameters(net)
    it += 1
    print(f"iter {it}: loss {loss.item():.6f}")
    state = {"net": net.state_dict(), "opt": opt.state_dict(), "avg": avg.state_dict(), "iter": it}
    state |= {"perm": perm, "cursor": cursor, "shuffle": shuffle.bit_generator.state}
    state["torch_rng"] = torch.get_rng_state()
    torch.save(state | ({} if args.bug == "lose-scaler" else {"amp": amp.state_dict()}), f"{args.out}/ckpt_{it}.pt")
