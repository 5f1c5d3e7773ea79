"""One process without a launcher: the kit's single-process calls, exactly as a trainer makes them without it."""

from collections.abc import Callable
from pathlib import Path
from typing import Any

from torch import nn

from resumeproof.common.errors import ResumeproofError
from resumeproof.kit import layout, resume
from resumeproof.kit.checkpoint import save as save_checkpoint
from resumeproof.kit.distributed.options import RANK_PARTS
from resumeproof.kit.distributed.reduce import LossOf
from resumeproof.kit.flags import ProtocolArgs
from resumeproof.kit.rundir import RunDir
from resumeproof.kit.summary import write_summary


class Single:
    """The whole batch in one forward and backward pass; a checkpoint file; the summary written directly."""

    def __init__(self) -> None:
        self.module: nn.Module | None = None

    def prepare(self, model: nn.Module) -> None:
        self.module = model

    def backward(self, loss_of: LossOf) -> float:
        assert self.module is not None, "prepare() first"
        loss = loss_of(self.module, slice(None))
        loss.backward()
        return loss.item()

    def begin(
        self, args: ProtocolArgs, t: layout.Training, expected: layout.Expected, warn: Callable[[str], None],
        accept_foreign: bool = False, pivots: dict[str, float] | None = None,
    ) -> tuple[RunDir, resume.Start]:  # fmt: skip
        asked = sorted(args.omit & set(RANK_PARTS))
        if asked:
            raise ResumeproofError(f"--omit={asked[0]}: a single process has no other ranks")
        if args.resume is not None and args.resume.is_dir():
            raise ResumeproofError(f"--resume {args.resume}: a DCP checkpoint directory resumes under torchrun")
        return resume.begin(args, t, expected, warn, accept_foreign, pivots)

    def save(self, path: Path, t: layout.Training, config: dict, identity: dict, provenance: list) -> str:
        return save_checkpoint(path, layout.capture(t, config, identity, provenance))

    def write_summary(self, output: Path, **document: Any) -> None:
        write_summary(output, **document)

    def meta(self) -> dict[str, Any]:
        return {}
