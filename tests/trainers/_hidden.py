"""A small classifier whose training keeps state outside every state_dict: a gate's call counter, the model's
temperature, and an EMA teacher that is a plain module beside it.

32 points of a three-armed spiral in two dimensions, three classes, built without any randomness. The student:
Linear(2, 16), tanh, dropout (torch's global generator), a `gate` that fades a residual branch in over its first 8
training calls, a Linear head to the classes, the logits divided by a temperature. Both the gate's counter
(`model.gate.calls`, an int) and the temperature (`model.temperature`, a float, annealed by 0.9 a training call
down to 1) are plain Python attributes that every training forward pass changes: neither is in
`model.state_dict()`, so a checkpoint holds them only if the loop saves them itself. The teacher is a
`copy.deepcopy` of the student, in eval mode and without gradients, moved toward it after every update
(`t = 0.9 t + 0.1 s`), and the loss distils it into the student.

Torch only: the protocol trainer (hidden_state.py) and the unmodified script (hidden_state_script.py) share it. The
schedules that read the loops' own counters are in each loop, beside the globals they read.
"""

import copy
import math

import torch
from torch import nn

BUGS = ("counter", "temperature", "teacher-strict", "teacher-renamed", "lr-global", "warmup-global")
ROWS, CLASSES = 32, 3


def spiral() -> tuple[torch.Tensor, torch.Tensor]:
    """Point i lies on arm i % 3, further out the larger i is: its class is its arm."""
    i = torch.arange(ROWS)
    targets = i % CLASSES
    radius = 0.2 + i / ROWS
    angle = 2 * radius + targets * (2 * math.pi / CLASSES)
    return torch.stack([radius * torch.cos(angle), radius * torch.sin(angle)], dim=1), targets


class Gate(nn.Module):
    """A residual branch faded in over the first 8 training calls, counted in a plain attribute."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.branch = nn.Linear(width, width)
        self.calls = 0  # training forward passes so far: an int, in no state_dict

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        out = h + torch.tanh(self.branch(h)) * min(1.0, (self.calls + 1) / 8)
        if self.training:
            self.calls += 1
        return out


class Net(nn.Module):
    """The student: its logits divided by a temperature that every training call anneals, a plain attribute."""

    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(2, 16), nn.Tanh(), nn.Dropout(0.1))
        self.gate = Gate(16)
        self.head = nn.Linear(16, CLASSES)
        self.temperature = 2.0  # a float, in no state_dict

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logits = self.head(self.gate(self.body(x))) / self.temperature
        if self.training:
            self.temperature = max(1.0, self.temperature * 0.9)
        return logits

    def param_groups(self) -> list[dict]:
        """Two groups, each with a schedule of its own: the body with the gate, and the head."""
        return [{"params": [*self.body.parameters(), *self.gate.parameters()]}, {"params": self.head.parameters()}]


def teacher_of(model: nn.Module) -> nn.Module:
    """The EMA teacher as built: a copy of the student, evaluated without dropout or gradients."""
    return copy.deepcopy(model).eval().requires_grad_(False)


@torch.no_grad()
def follow(teacher: nn.Module, model: nn.Module, decay: float = 0.9) -> None:
    """The teacher moved toward the student, in place: t = 0.9 t + 0.1 s."""
    for t, s in zip(teacher.parameters(), model.parameters(), strict=True):
        t.mul_(decay).add_(s, alpha=1 - decay)


def loss_of(logits: torch.Tensor, taught: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Cross-entropy on the labels plus half the KL divergence from the teacher's distribution."""
    distil = nn.functional.kl_div(logits.log_softmax(1), taught.softmax(1), reduction="batchmean")
    return nn.functional.cross_entropy(logits, targets) + 0.5 * distil
