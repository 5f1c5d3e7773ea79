"""What a training loop calls, the same for one process (single.py) and for a group of ranks (group.py)."""

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from torch import nn

from resumeproof.kit import layout, resume
from resumeproof.kit.distributed.reduce import LossOf
from resumeproof.kit.flags import ProtocolArgs


class RunDirLike(Protocol):
    """kit.RunDir, or its shared form for a group of ranks."""

    @property
    def stopped_by(self) -> str | None: ...

    def start(self, step: int, **event: object) -> None: ...
    def log(self, record: dict) -> None: ...
    def after_update(self, step: int, save: Callable[[Path], str]) -> bool: ...
    def finish(self, save: Callable[[Path], str]) -> str: ...
    def close(self) -> None: ...


class Parallel(Protocol):
    def prepare(self, model: nn.Module) -> None:
        """Wrap or shard the model in place; build the optimizer after this."""

    def backward(self, loss_of: LossOf) -> float:
        """Every parameter's gradient for the global batch; the global mean loss."""

    def begin(
        self, args: ProtocolArgs, t: layout.Training, expected: layout.Expected, warn: Callable[[str], None],
        accept_foreign: bool = False, pivots: dict[str, float] | None = None,
    ) -> tuple[RunDirLike, resume.Start]:  # fmt: skip
        """Where the run starts: everything restored but the generators, the run directory open."""

    def save(self, path: Path, t: layout.Training, config: dict, identity: dict, provenance: list) -> str:
        """A checkpoint at `path` (a file, or a DCP directory); its sha256."""

    def write_summary(self, output: Path, **document: Any) -> None:
        """summary.json, written once."""

    def meta(self) -> dict[str, Any]:
        """What this mode adds to the summary's meta (nothing for one process)."""
