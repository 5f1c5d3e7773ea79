"""What a training loop calls, the same for one process (single.py) and for a group of ranks (group.py).

    par.prepare(model)                                          # before the optimizer is built
    run = par.open_run(args, options)                           # a kit.Run: found, loaded, validated; nothing restored
    par.set_state_dict(model, optimizer, model_state_dict=..., optim_state_dict=...)   # the trainer's restore
    for rows in par.shards():                                   # the forward and backward passes of one update
        par.backward(loss_fn(par.module(x[rows]), y[rows]))
    loss = par.reduce()
    par.save(path, {MODEL: model_sd, OPTIMIZER: optim_sd, ...})  # model_sd, optim_sd = par.get_state_dict(...)

`Single` makes the plain calls (`state_dict()`, one pass over the whole batch, torch.save); `Group` the
distributed ones (DCP's state-dict API, this rank's rows, a DCP directory).
"""

from abc import ABC, abstractmethod
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
from torch import nn

from resumeproof.kit import resume
from resumeproof.kit.flags import ProtocolArgs
from resumeproof.kit.run import Run
from resumeproof.kit.state_dicts import StateDicts


class Parallel(StateDicts, ABC):
    """The training calls of one process or of one rank; the model's and optimizer's state dicts as StateDicts says:
    `state_dict()` and `load_state_dict()`, or DCP's get_state_dict and set_state_dict under torchrun."""

    @abstractmethod
    def prepare(self, model: nn.Module) -> None:
        """Wrap or shard the model in place; build the optimizer after this."""

    @property
    @abstractmethod
    def module(self) -> nn.Module:
        """What the forward pass runs: the model, its DDP wrapper, or a full copy of FSDP2's shards."""

    @abstractmethod
    def shards(self) -> Iterator[slice]:
        """The rows of the global batch this process computes, one forward and backward pass each: all of
        them in one process, this rank's under torchrun, one row at a time for the canonical reductions."""

    @abstractmethod
    def backward(self, loss: torch.Tensor) -> None:
        """The backward pass of the mean loss over the current shard's rows."""

    @abstractmethod
    def reduce(self) -> float:
        """Every parameter's gradient set for the global batch; the global mean loss."""

    @abstractmethod
    def open_run(self, args: ProtocolArgs, options: resume.Options) -> Run:
        """The run, with what it continues from (found, loaded, validated; nothing restored) and its run directory:
        one process's, or one the ranks share; the rank-local parts withdrawn where there are no other ranks."""

    @abstractmethod
    def save(self, path: Path, checkpoint: dict[str, Any]) -> str:
        """The checkpoint dict at `path` (a file, or a DCP directory); its sha256."""

    @abstractmethod
    def meta(self) -> dict[str, Any]:
        """What this mode adds to the summary's meta (nothing for one process)."""
