"""Accelerate's save_state / load_state with an EMA registered for checkpointing, resumed mid-epoch.

    python -B verify_resume.py --output runs/accelerate-ema --allow-unsafe-pickle 'random_states_*.pkl' \
        --train-cmd "python -B tests/trainers/corpus_other/accelerate_ema.py --bug ema-not-registered"

No resumeproof (tests/trainers/corpus_other/_plain.py): the resume path of Accelerate's checkpointing example.
`accelerator.save_state()` writes the model, the optimizer, the scheduler, the global generators and every object
registered with `register_for_checkpointing` into OUTPUT/checkpoint.pt/ (the protocol's directory checkpoint,
fingerprinted by hand); `load_state()` restores them. The data order is Accelerate's seedable sampler (a function
of the seed and the epoch, `set_epoch` every epoch), and the position is derived from the step: the first resumed
epoch skips the batches already trained with `skip_first_batches`. An EMA of the weights (an object with
`state_dict` and `load_state_dict`) is evaluated at the end. Accelerate saves NumPy's generator state in a pickle
that needs NumPy's globals, hence `--allow-unsafe-pickle 'random_states_*.pkl'`.

Bugs:
- `ema-not-registered`: the EMA is never passed to `register_for_checkpointing`, so save_state does not save it and
  the resumed run averages on from the EMA it built from the initial weights. True cause: `ema`.
- `skip-every-epoch`: the resume rebinds the loader, `train_dataloader = accelerator.skip_first_batches(...)`, so
  every later epoch skips those batches too: exact until the epoch after the resume. True cause: `data`.
Parts: model, optimizer, scheduler, ema, data (the position derived from the step), rng-torch (dropout).
"""

import copy
import random

import _plain
import numpy as np
import torch
from accelerate import Accelerator
from accelerate.utils import DataLoaderConfiguration, set_seed
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

PARTS = ("model", "optimizer", "scheduler", "ema", "data", "rng-torch")


class EMA:
    """An exponential moving average of a model's parameters."""

    def __init__(self, model: nn.Module, decay: float = 0.8) -> None:
        self.decay = decay
        self.shadow = {k: v.detach().clone() for k, v in model.state_dict().items()}

    @torch.no_grad()
    def update(self, model: nn.Module) -> None:
        for k, v in model.state_dict().items():
            self.shadow[k].mul_(self.decay).add_(v, alpha=1 - self.decay)

    def state_dict(self) -> dict:
        return {"decay": self.decay, "shadow": self.shadow}

    def load_state_dict(self, state: dict) -> None:
        self.decay, self.shadow = state["decay"], {k: v.clone() for k, v in state["shadow"].items()}


args = _plain.get_args(__doc__, PARTS, bugs=("ema-not-registered", "skip-every-epoch"))
torch.set_num_threads(1)
torch.set_default_dtype(torch.float64)
accelerator = Accelerator(cpu=True, dataloader_config=DataLoaderConfiguration(use_seedable_sampler=True))
set_seed(42)

x = torch.rand(24, 2) * 4 - 2
y = torch.sin(x[:, :1]) * torch.cos(x[:, 1:])
dataset = TensorDataset(torch.arange(24), x, y)
train_dataloader = DataLoader(dataset, batch_size=4, shuffle=True, generator=torch.Generator().manual_seed(42))
model = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Dropout(0.2), nn.Linear(16, 1))
optimizer = torch.optim.AdamW(model.parameters(), lr=0.02)
lr_scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.95)
model, optimizer, train_dataloader, lr_scheduler = accelerator.prepare(model, optimizer, train_dataloader, lr_scheduler)
ema = EMA(accelerator.unwrap_model(model))
if args.bug != "ema-not-registered":
    accelerator.register_for_checkpointing(ema)

completed_steps, history, starting_epoch, resume_step = 0, [], 0, 0
if args.resume:
    _plain.check_dir(args.resume)
    saved = torch.load(args.resume / "history.pt", map_location="cpu", weights_only=True)
    completed_steps, history = saved["completed_steps"], saved["history"]
    # load_state restores everything; what --omit names is put back as built (the protocol's fault runs)
    kept = {
        "model": (model, copy.deepcopy(model.state_dict())),
        "optimizer": (optimizer, copy.deepcopy(optimizer.state_dict())),
        "scheduler": (lr_scheduler, copy.deepcopy(lr_scheduler.state_dict())),
        "ema": (ema, copy.deepcopy(ema.state_dict())),
    }
    generators = (random.getstate(), np.random.get_state(), torch.get_rng_state())
    accelerator.load_state(str(args.resume))
    for part, (obj, fresh) in kept.items():
        if not _plain.restore(args, part):
            obj.load_state_dict(fresh)
    if not _plain.restore(args, "rng-torch"):
        torch.set_rng_state(generators[2])
    if _plain.restore(args, "data"):
        starting_epoch, resume_step = divmod(completed_steps, len(train_dataloader))
    if args.bug == "skip-every-epoch" and resume_step:
        train_dataloader = accelerator.skip_first_batches(train_dataloader, resume_step)

end = completed_steps + args.steps
epoch = starting_epoch
while completed_steps < end:
    train_dataloader.set_epoch(epoch)
    if args.bug is None or args.bug == "ema-not-registered":
        skip = resume_step if epoch == starting_epoch else 0
        active_dataloader = accelerator.skip_first_batches(train_dataloader, skip) if skip else train_dataloader
    else:
        active_dataloader = train_dataloader
    model.train()
    for idx, xb, yb in active_dataloader:
        loss = nn.functional.mse_loss(model(xb), yb)
        lr = optimizer.param_groups[0]["lr"]
        accelerator.backward(loss)
        optimizer.step()
        lr_scheduler.step()
        optimizer.zero_grad()
        ema.update(accelerator.unwrap_model(model))
        completed_steps += 1
        history.append({"step": completed_steps, "rows": idx.tolist(), "lr": lr, "loss": loss.item()})
        if completed_steps == end:
            break
    epoch += 1

checkpoint = args.output / "checkpoint.pt"
accelerator.save_state(str(checkpoint))
torch.save({"completed_steps": completed_steps, "history": history}, checkpoint / "history.pt")
_plain.fingerprint_dir(checkpoint)
net = accelerator.unwrap_model(model).eval()
with torch.no_grad():
    mse = nn.functional.mse_loss(net(x), y).item()
    ema_mse = nn.functional.mse_loss(torch.func.functional_call(net, ema.shadow, (x,)), y).item()
_plain.write_summary(
    args,
    PARTS,
    step=completed_steps,
    history=history,
    state={"model": net.state_dict(), "optimizer": optimizer.state_dict(), "ema": ema.shadow, "epoch": epoch},
    next={"lr": optimizer.param_groups[0]["lr"], "rng": {"torch": _plain.peek()}},
    eval={"mse": mse, "ema_mse": ema_mse},
)
