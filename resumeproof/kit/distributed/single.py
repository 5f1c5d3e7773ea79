"""One process without a launcher: the kit's single-process calls, exactly as a trainer makes them without it.

It writes checkpoint files, and resumes a file or a DCP directory written under torchrun at any world size
(DCP's load without a process group, through the safe reader: state.load), held to the same checks."""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
from torch import nn

from resumeproof.common.protocol import RANK_PARTS
from resumeproof.kit import resume
from resumeproof.kit.checkpoint import load as load_checkpoint
from resumeproof.kit.checkpoint import save as save_checkpoint
from resumeproof.kit.checkpoint import verify_manifest
from resumeproof.kit.distributed import state
from resumeproof.kit.distributed.options import refuse_other_kind_in_place
from resumeproof.kit.distributed.parallel import Parallel
from resumeproof.kit.flags import ProtocolArgs
from resumeproof.kit.run import Run

ALONE = "a single process has no other ranks"


class Single(Parallel):
    """The whole batch in one forward and backward pass; a checkpoint file; the summary written directly."""

    def __init__(self) -> None:
        self._module: nn.Module | None = None

    def prepare(self, model: nn.Module) -> None:
        self._module = model

    @property
    def module(self) -> nn.Module:
        assert self._module is not None, "prepare() first"
        return self._module

    def shards(self) -> Iterator[slice]:
        yield slice(None)

    def backward(self, loss: torch.Tensor) -> None:
        loss.backward()
        self._loss = loss

    def reduce(self) -> float:
        return self._loss.item()

    def open_run(self, args: ProtocolArgs, options: resume.Options) -> Run:
        for part in RANK_PARTS:
            args = args.withdrawn(part, ALONE) if part in args.parts else args
        if args.resume_auto:
            refuse_other_kind_in_place(args.output, directories=False)
        training = options.training

        def read(path: Path) -> dict[str, Any]:
            """A checkpoint file, or a DCP directory written under torchrun (at any world size, any reduction):
            its sidecar, then DCP's load without a process group through the safe reader, every shard
            gathered into this process's full tensors, in the layout's form (optimizer state by index)."""
            if not path.is_dir():
                return load_checkpoint(path)
            verify_manifest(path)
            return state.load(path, training.model, training.optimizer).view

        return resume.open_run(args, options, read=read)

    def save(self, path: Path, checkpoint: dict[str, Any]) -> str:
        return save_checkpoint(path, checkpoint)

    def meta(self) -> dict[str, Any]:
        return {}
