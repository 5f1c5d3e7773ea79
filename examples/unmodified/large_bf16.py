"""A large bf16 training script on one GPU, written with no thought of resumeproof: nanoGPT's flags and its single
checkpoint `{out-dir}/ckpt.pt`, overwritten after every update; 16 residual Linear(8192, 8192) layers by default
(1.07B parameters), pure bf16 (weights, gradients and AdamW's moments: a checkpoint of about 6 GB), batches drawn
from the device's own generator. Its resume restores the model, the optimizer, the iteration and both generators.
`resumeproof verify --observe` verifies it with no line changed (docs/observe.md, docs/gpu.md):

    resumeproof verify --observe --output runs/large --steps 3 --interrupt-at 1 \\
      --train-cmd  "python large_bf16.py --max-iters {steps} --out-dir {run}" \\
      --resume-cmd "python large_bf16.py --max-iters {steps} --out-dir {run} --resume {checkpoint}" \\
      --checkpoint "{run}/ckpt.pt"

`--layers 2 --width 64 --device cpu` is the same script small enough for a CPU.
"""

import argparse
import os
import time

import torch
from torch import nn

p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
p.add_argument("--max-iters", type=int, default=20)
p.add_argument("--out-dir", default="out")
p.add_argument("--resume", default=None, help="a ckpt.pt to resume from")
p.add_argument("--layers", type=int, default=16)
p.add_argument("--width", type=int, default=8192)
p.add_argument("--batch-size", type=int, default=8)
p.add_argument("--learning-rate", type=float, default=3e-4)
p.add_argument("--device", default="cuda")
args = p.parse_args()

device = torch.device(args.device)
dtype = torch.bfloat16
torch.manual_seed(1337)
os.makedirs(args.out_dir, exist_ok=True)


class Net(nn.Module):
    def __init__(self, layers: int, width: int):
        super().__init__()
        # built in place, in bf16: a billion parameters are not drawn on the CPU in float32 first
        self.layers = nn.ModuleList(nn.Linear(width, width, device=device, dtype=dtype) for _ in range(layers))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = x + nn.functional.gelu(layer(x))
        return x


model = Net(args.layers, args.width)
optimizer = torch.optim.AdamW(model.parameters(), lr=args.learning_rate, weight_decay=0.1)
print(f"{sum(param.numel() for param in model.parameters()) / 1e6:.1f}M parameters on {device}")


def get_batch() -> tuple[torch.Tensor, torch.Tensor]:
    # drawn on the device, from its own generator (torch.cuda's on a GPU)
    x = torch.randn(args.batch_size, args.width, device=device, dtype=dtype)
    return x, torch.randn(args.batch_size, args.width, device=device, dtype=dtype)


iter_num = 0
if args.resume:
    checkpoint = torch.load(args.resume, map_location=device)
    model.load_state_dict(checkpoint["model"])
    optimizer.load_state_dict(checkpoint["optimizer"])
    iter_num = checkpoint["iter_num"]
    torch.set_rng_state(checkpoint["rng_state"].cpu())
    if device.type == "cuda":
        torch.cuda.set_rng_state(checkpoint["cuda_rng_state"].cpu(), device)
    del checkpoint  # six gigabytes

model.train()
while iter_num < args.max_iters:
    started = time.perf_counter()
    x, y = get_batch()
    loss = nn.functional.mse_loss(model(x).float(), y.float())
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    iter_num += 1
    checkpoint = {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "iter_num": iter_num,
        "config": vars(args),
        "rng_state": torch.get_rng_state(),
    }
    if device.type == "cuda":
        checkpoint["cuda_rng_state"] = torch.cuda.get_rng_state(device)
    torch.save(checkpoint, os.path.join(args.out_dir, "ckpt.pt"))
    print(f"iter {iter_num}: loss {loss.item():.4f}, {time.perf_counter() - started:.2f} s")
