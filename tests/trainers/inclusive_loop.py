"""A loop in nanoGPT's shape, written with no thought of resumeproof: `--key=value` overrides of its globals, batches
drawn with `torch.randint` from the global generator, a constant learning rate (no scheduler object), float64 on the
CPU (no GradScaler), and iterations 0 to `max_iters` inclusive: told `--max_iters=N`, it makes N+1 updates. Each
iteration starts by saving `ckpt_{iter_num}.pt` (the state after iter_num updates), as nanoGPT's does at its
evaluation interval; `--resume_from=PATH` continues from one.

Like nanoGPT it seeds its generator again on resume instead of restoring it (the batches after a resume are not the
ones the run would have drawn); `--save_rng=True` also saves and restores the generator, which makes the resume
exact. `verify --observe` runs it as tests/e2e/test_faults_not_applicable.py does:

    python -B tests/trainers/inclusive_loop.py --max_iters={steps} --out_dir={run} [--resume_from={checkpoint}]
"""

import os
import sys
from ast import literal_eval

import torch
from torch import nn

max_iters = 10
out_dir = "out"
resume_from = ""
save_rng = False
learning_rate = 3e-3
for arg in sys.argv[1:]:  # nanoGPT's configurator: --key=value overrides a global of the same name and type
    key, _, value = arg.removeprefix("--").partition("=")
    if key not in globals() or not arg.startswith("--"):
        raise SystemExit(f"{arg}: unknown option (expected --key=value, key among the globals above)")
    try:
        parsed = literal_eval(value)
    except (ValueError, SyntaxError):
        parsed = value
    if type(parsed) is not type(globals()[key]):
        raise SystemExit(f"{arg}: {key} takes a {type(globals()[key]).__name__}")
    globals()[key] = parsed

torch.set_num_threads(1)
torch.set_default_dtype(torch.float64)
torch.manual_seed(1337)  # nanoGPT seeds here, on a resume too
os.makedirs(out_dir, exist_ok=True)
data = torch.randn(256, 8, generator=torch.Generator().manual_seed(0))
targets = data.sum(dim=1, keepdim=True)
model = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 1))
optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate, weight_decay=0.1)

iter_num = 0
if resume_from:
    checkpoint = torch.load(resume_from, map_location="cpu", weights_only=True)
    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    iter_num = checkpoint["iter_num"]
    if "rng" in checkpoint:
        torch.set_rng_state(checkpoint["rng"])

while True:
    if iter_num > 0:  # the state after iter_num updates, before the next one
        checkpoint = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "iter_num": iter_num}
        if save_rng:
            checkpoint["rng"] = torch.get_rng_state()
        torch.save(checkpoint, os.path.join(out_dir, f"ckpt_{iter_num}.pt"))
    ix = torch.randint(len(data), (16,))
    loss = nn.functional.mse_loss(model(data[ix]), targets[ix])
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    iter_num += 1
    if iter_num > max_iters:  # nanoGPT's termination: iteration max_iters has run, so max_iters + 1 updates
        break
