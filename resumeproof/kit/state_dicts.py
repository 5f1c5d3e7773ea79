"""How a model's and an optimizer's state dicts are read and loaded: plainly in one process, through DCP's
state-dict API under torchrun (kit.distributed's Group), where the two load together."""

import torch
from torch import nn


class StateDicts:
    """The model's and optimizer's sections of a checkpoint, read and loaded. This class does it plainly, with
    `state_dict()` and `load_state_dict()` (one process); a subclass changes how by `get_state_dict` and `load`
    (kit.distributed's Group: DCP's state-dict API, both loading together). `set_state_dict`, the call a trainer
    makes, is the same for all of them."""

    def get_state_dict(self, model: nn.Module, optimizer: torch.optim.Optimizer) -> tuple[dict, dict]:
        """The model's and optimizer's state dicts."""
        return dict(model.state_dict()), optimizer.state_dict()

    def set_state_dict(
        self,
        model: nn.Module,
        optimizer: torch.optim.Optimizer,
        *,
        model_state_dict: dict | None,
        optim_state_dict: dict | None,
    ) -> None:
        """Load what get_state_dict gave; None leaves that part as built (a resume told to omit it)."""
        self.load(model, optimizer, model_state_dict, optim_state_dict)

    def load(
        self,
        model: nn.Module,
        optimizer: torch.optim.Optimizer,
        model_state_dict: dict | None,
        optim_state_dict: dict | None,
    ) -> None:
        """How set_state_dict loads: each part by its own `load_state_dict`."""
        if model_state_dict is not None:
            model.load_state_dict(model_state_dict)
        if optim_state_dict is not None:
            optimizer.load_state_dict(optim_state_dict)


PLAIN = StateDicts()
