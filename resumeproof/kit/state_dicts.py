"""How a model's and an optimizer's state dicts are read and loaded: plainly in one process, through DCP's
state-dict API under torchrun (kit.distributed's Group), where the two load together."""

from typing import Protocol

import torch
from torch import nn


class StateDicts(Protocol):
    """How the model's and optimizer's sections are read and loaded: `PlainStateDicts` in one process, DCP's
    state-dict API under torchrun (kit.distributed's Group), where both load together."""

    def get_state_dict(self, model: nn.Module, optimizer: torch.optim.Optimizer) -> tuple[dict, dict]:
        """The model's and optimizer's state dicts: `state_dict()`, or DCP's get_state_dict under torchrun."""
        ...

    def set_state_dict(
        self,
        model: nn.Module,
        optimizer: torch.optim.Optimizer,
        *,
        model_state_dict: dict | None,
        optim_state_dict: dict | None,
    ) -> None:
        """Load what get_state_dict gave (None: leave it as built): `load_state_dict`, or DCP's set_state_dict."""
        ...


class PlainStateDicts:
    """`state_dict()` and `load_state_dict()`: one process's model and optimizer."""

    def get_state_dict(self, model: nn.Module, optimizer: torch.optim.Optimizer) -> tuple[dict, dict]:
        return dict(model.state_dict()), optimizer.state_dict()

    def set_state_dict(
        self,
        model: nn.Module,
        optimizer: torch.optim.Optimizer,
        *,
        model_state_dict: dict | None,
        optim_state_dict: dict | None,
    ) -> None:
        if model_state_dict is not None:  # None: left as built
            model.load_state_dict(model_state_dict)
        if optim_state_dict is not None:
            optimizer.load_state_dict(optim_state_dict)


PLAIN = PlainStateDicts()
