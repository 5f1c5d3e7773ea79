"""The tiny experiment every framework example trains: the user's own code, nothing of the protocol in it.

24 rows generated from a private generator, a 2 -> 8 -> 1 network with tanh and dropout,
AdamW and StepLR stepped per update, batch 4: six updates per epoch, so a 12-step run crosses
an epoch boundary at 6 and a verification takes seconds. Float64 on one CPU thread (the kit sets
it up). Randomness: torch's global generator (weight init, dropout and, where a DataLoader has no
generator of its own, each epoch's shuffle seed and each iterator's base seed); Python's and
NumPy's global generators (augmentation drawn in `Rows.__getitem__`, as torchvision-style
transforms do). `StatelessRows` is the same augmentation drawn from a private generator per
example: the user-level fix of docs/audit.md for loaders that fetch ahead.
"""

import random
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn


@dataclass(frozen=True, kw_only=True)
class Experiment:
    rows: int = 24  # synthetic data set size
    batch: int = 4  # 24 / 4 = 6 updates per epoch
    seed: int = 0  # what each framework's own seeding function receives
    lr: float = 0.03
    step_size: int = 3  # StepLR: halve the lr every 3 updates
    gamma: float = 0.5
    dropout: float = 0.25

    def __post_init__(self) -> None:
        if self.rows % self.batch:
            raise ValueError(f"rows {self.rows} must be a multiple of batch {self.batch}: whole epochs of full batches")


EXPERIMENT = Experiment()


def data(e: Experiment = EXPERIMENT) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs and targets from a private generator: building them touches no global generator."""
    g = np.random.Generator(np.random.PCG64(1234))
    x = g.uniform(-1.0, 1.0, size=(e.rows, 2))
    y = 1.5 * x[:, 0] - 2.0 * x[:, 1] + 0.5 * x[:, 0] * x[:, 1] + g.normal(0.0, 0.1, size=e.rows)
    return torch.from_numpy(x), torch.from_numpy(y[:, None].copy())


class Rows(torch.utils.data.Dataset):
    """Each example with its id and a random augmentation drawn from the global generators."""

    def __init__(self, x: torch.Tensor, y: torch.Tensor) -> None:
        self.x, self.y = x, y

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int) -> dict[str, Any]:
        noise = torch.from_numpy(np.random.normal(0.0, 0.02, size=2))  # NumPy's legacy global
        gain = 1.0 + random.uniform(-0.05, 0.05)  # Python's global
        return {"idx": i, "x": (self.x[i] + noise) * gain, "y": self.y[i]}


class StatelessRows(Rows):
    """The same augmentation as a pure function of the example: a private generator per item, so that
    no loader that fetches ahead, and no restore order, can change what an example receives."""

    def __getitem__(self, i: int) -> dict[str, Any]:
        g = torch.Generator().manual_seed(10_000 + i)  # per epoch variety would seed with (seed, epoch, i)
        noise = torch.randn(2, generator=g, dtype=torch.float64) * 0.02
        gain = 1.0 + (torch.rand((), generator=g, dtype=torch.float64).item() * 0.1 - 0.05)
        return {"idx": i, "x": (self.x[i] + noise) * gain, "y": self.y[i]}


class Net(nn.Module):
    def __init__(self, e: Experiment = EXPERIMENT) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(2, 8), nn.Tanh(), nn.Dropout(e.dropout), nn.Linear(8, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)


def optimizer_and_scheduler(
    params: Any, e: Experiment = EXPERIMENT
) -> tuple[torch.optim.Optimizer, torch.optim.lr_scheduler.StepLR]:
    optimizer = torch.optim.AdamW(params, lr=e.lr)
    return optimizer, torch.optim.lr_scheduler.StepLR(optimizer, step_size=e.step_size, gamma=e.gamma)


def loss_fn(prediction: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return nn.functional.mse_loss(prediction, target)


def evaluate(net: nn.Module, x: torch.Tensor, y: torch.Tensor) -> dict[str, Any]:
    """MSE and predictions in eval mode (no dropout: evaluating draws nothing), training mode put back."""
    was_training = net.training
    net.eval()
    with torch.no_grad():
        prediction = net(x)
    net.train(was_training)
    return {"mse": loss_fn(prediction, y).item(), "predictions": prediction.flatten().tolist()}
