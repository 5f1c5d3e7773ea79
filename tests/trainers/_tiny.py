"""The tiny experiment the kit-based test trainers share: 16 or 24 rows, a 2 -> 8 -> 1 net with dropout, Adam.

The same set-up as examples/minimal_loop.py, so that a test trainer differs from it only in the
one thing it tests (its checkpoint layout, its fault).
"""

import torch


def data(rows: int) -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.linspace(-1, 1, 2 * rows).reshape(rows, 2)
    return x, x[:, :1] - 2 * x[:, 1:]


def model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.Tanh(), torch.nn.Dropout(0.2), torch.nn.Linear(8, 1))


def update(net, optimizer, x, y, rows, scheduler=None) -> tuple[float, float]:
    """One update on `rows`; the lr it applied and its loss."""
    lr = optimizer.param_groups[0]["lr"]
    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(net(x[rows]), y[rows])
    loss.backward()
    optimizer.step()
    if scheduler is not None:
        scheduler.step()
    return lr, loss.item()
