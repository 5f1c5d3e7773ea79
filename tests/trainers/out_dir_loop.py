"""A training loop in nanoGPT's style that resumes from its own output folder, written for the tests of
`verify --observe --resume-from-run` (docs/observe.md, "A loop that resumes from its output folder"):

    python -B out_dir_loop.py out_dir_loop_config.py --out_dir=runs/a --max_iters=6
    python -B out_dir_loop.py out_dir_loop_config.py --out_dir=runs/a --max_iters=6 --init_from=resume

The configuration is the globals below, then each config file named on the command line, then `--key=value`
overrides (a Python literal, else a string; only keys that exist, with the default's type). `init_from=resume`
reads `out_dir/ckpt.pt`, which the loop rewrites every `eval_interval` iterations before the update it starts;
the learning rate is a function of the iteration number alone. `keep_rng=False` saves and restores no generator
state, as nanoGPT's own checkpoint: the resume then draws the batches and dropout masks of the run's first
updates again (the bug the verifier must name: rng-torch).
"""

import ast
import math
import os
import sys

import torch
from torch import nn

out_dir = "out"
init_from = "scratch"  # or "resume": from out_dir/ckpt.pt
eval_interval = 1  # save ckpt.pt every this many iterations
max_iters = 20  # updates in all
log_file = ""  # a file to append "iter loss" lines to ("": none)
batch_size = 8
n_embd = 16
dropout = 0.1
learning_rate = 3e-3
warmup_iters = 2
lr_decay_iters = 20
min_lr = 3e-4
seed = 1337
keep_rng = True  # False: nanoGPT's checkpoint, with no generator state


def configure(argv: list[str], config: dict) -> None:
    """Config files first (Python assignments run over the defaults), then --key=value overrides."""
    for arg in argv:
        if not arg.startswith("--"):
            with open(arg) as f:
                exec(f.read(), config)  # the config file is the user's own Python, as nanoGPT's are
            continue
        key, sep, text = arg[2:].partition("=")
        if not sep or key not in config:
            sys.exit(f"{arg}: not a --key=value override of a known key")
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            value = text  # a bare string: --out_dir=runs/a
        if type(value) is not type(config[key]):
            sys.exit(f"{arg}: {key} is a {type(config[key]).__name__}, not a {type(value).__name__}")
        config[key] = value


configure(sys.argv[1:], globals())
torch.set_num_threads(1)
torch.set_default_dtype(torch.float64)
torch.manual_seed(seed)
os.makedirs(out_dir, exist_ok=True)
ckpt_path = os.path.join(out_dir, "ckpt.pt")

data = torch.randn(256, 8, generator=torch.Generator().manual_seed(0))  # the task: the sum of a window of 8
targets = data.sum(dim=1, keepdim=True)


def get_batch() -> tuple[torch.Tensor, torch.Tensor]:
    ix = torch.randint(len(data), (batch_size,))  # from the global generator
    return data[ix], targets[ix]


def get_lr(it: int) -> float:
    """Linear warm-up, then cosine decay to min_lr: a function of the iteration alone, so nothing to save."""
    if it < warmup_iters:
        return learning_rate * (it + 1) / (warmup_iters + 1)
    if it > lr_decay_iters:
        return min_lr
    ratio = (it - warmup_iters) / (lr_decay_iters - warmup_iters)
    return min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (learning_rate - min_lr)


model = nn.Sequential(nn.Linear(8, n_embd), nn.GELU(), nn.Dropout(dropout), nn.Linear(n_embd, 1))
optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate, weight_decay=0.1)
iter_num = 0
if init_from == "resume":
    checkpoint = torch.load(ckpt_path, map_location="cpu", weights_only=True)
    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    iter_num = checkpoint["iter_num"]
    if keep_rng:
        torch.set_rng_state(checkpoint["rng"])
elif init_from != "scratch":
    sys.exit(f"--init_from={init_from}: scratch or resume")

model.train()
while True:
    for group in optimizer.param_groups:
        group["lr"] = get_lr(iter_num)
    if iter_num > 0 and iter_num % eval_interval == 0:  # before the update it starts, as nanoGPT saves
        checkpoint = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "iter_num": iter_num}
        if keep_rng:
            checkpoint["rng"] = torch.get_rng_state()
        torch.save(checkpoint, ckpt_path)
    if iter_num >= max_iters:  # exactly max_iters updates
        break
    x, y = get_batch()
    loss = nn.functional.mse_loss(model(x), y)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    iter_num += 1
    if log_file:
        os.makedirs(os.path.dirname(log_file) or ".", exist_ok=True)
        with open(log_file, "a") as f:
            f.write(f"{iter_num} {loss.item():.6f}\n")
