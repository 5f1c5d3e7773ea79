"""A fork as one typed object built once: fork.json is written from it, the terminal report and fork.png render it.

The fork is fair only when every check passed (docs/fork.md): each branch continues the original run's history, the
control reproduces the original run's continuation or its own repeat, and each branch's first update starts from the
control's inputs. Who ended lower is said either way, and marked as no fair comparison where it is none.
"""

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from resumeproof.common import codec, protocol
from resumeproof.common.protocol import CheckKind
from resumeproof.verify.report.result import TrajectoryRecord
from resumeproof.verify.vocabulary.findings import Check

FORMAT = "resumeproof-fork/1"


@dataclass(frozen=True, kw_only=True)
class Point:
    """One update of a loss curve, as its history record says it."""

    step: int
    loss: float
    lr: float


@dataclass(frozen=True, kw_only=True)
class BranchResult:
    """One branch as it ran from the fork point: its curve, and where it parts from the control."""

    name: str = field(metadata=codec.field(skip=True))  # fork.json's key for it
    overrides: tuple[str, ...]
    parts_at: int | None = None  # the first update whose history record differs from the control's; None: none does
    parted_by: str | None = None  # that difference (path: reason); or, with the same history, the summary's first one
    first_difference: str | None = None  # the observer: what first differs in its first update from the control's
    curve: tuple[Point, ...] = ()  # its updates after the fork point

    @property
    def final_loss(self) -> float | None:
        return self.curve[-1].loss if self.curve else None

    def json_extra(self, written: dict[str, Any]) -> dict[str, Any]:
        """Its final loss for a reader, right after the overrides that led to it."""
        return {"overrides": written["overrides"], "final_loss": self.final_loss} | written


@dataclass(frozen=True, kw_only=True)
class Fork:
    error: str | None  # why it could not complete (exit 2), else None
    checkpoint: Path
    sha256: str | None
    train_cmd: str
    steps: int
    fork_step: int | None = None
    sources: tuple[str, ...] = ()  # the original run's files its records came from
    continuation: int = 0  # the original run's updates after the fork point the control was held to
    before: tuple[Point, ...] = ()  # the history up to the fork point, as the control carried it on
    branches: tuple[BranchResult, ...] = ()  # the control first, then the user's in the order given
    checks: tuple[Check, ...] = ()
    processes: dict[str, TrajectoryRecord] = field(default_factory=dict)  # every process, the repeat included
    plot: Path | None = None

    @property
    def fair(self) -> bool:
        return self.error is None and bool(self.checks) and all(c.passed for c in self.checks)

    @property
    def reasons(self) -> list[str]:
        """Why the fork is not fair, the trainer's own determinism first: nothing else is evidence without it."""
        failed = sorted((c for c in self.checks if not c.passed), key=lambda c: c.id.kind is not CheckKind.DETERMINISM)
        return [c.detail or c.name for c in failed]

    @property
    def ranking(self) -> list[BranchResult]:
        """The branches by their final loss, lowest first; a non-finite one last."""
        return sorted(self.branches, key=lambda b: (not _finite(b.final_loss), b.final_loss or 0.0))

    @property
    def lowest(self) -> BranchResult | None:
        """The branch that ended with the lowest finite loss."""
        return next((b for b in self.ranking if _finite(b.final_loss)), None)

    def outcome(self) -> str | None:
        """Which branch ended lower, and by how much; None where no branch ran."""
        if not self.branches:
            return None
        finite = [b for b in self.ranking if _finite(b.final_loss)]
        lost = [b.name for b in self.branches if b not in finite]
        also = f"; {', '.join(lost)} ended with no finite loss" if lost else ""
        if len(finite) < 2:
            return f"{finite[0].name} alone ended with a finite loss{also}" if finite else "no branch ended with a loss"
        low, up = finite[0].final_loss or 0.0, finite[1].final_loss or 0.0
        if low == up:
            return f"{finite[0].name} and {finite[1].name} ended level (loss {low:.6g}){also}"
        said = f"{finite[0].name} ended lowest, {up - low:.4g} below {finite[1].name}"
        return f"{said} ({low:.6g} vs {up:.6g} at step {finite[0].curve[-1].step}){also}"

    def no_change(self) -> list[BranchResult]:
        """The branches identical to the control: an override that changed nothing the records show."""
        return [b for b in self.branches if b.overrides and b.parts_at is None and b.parted_by is None]

    def to_json(self) -> dict[str, Any]:
        """fork.json: the fields, among what it says for a reader."""
        return codec.encode(
            {
                "format": FORMAT,
                "fair": self.fair,
                "reasons": self.reasons,
                "error": self.error,
                "checkpoint": self.checkpoint,
                "checkpoint_sha256": self.sha256,
                "train_cmd": self.train_cmd,
                "steps": self.steps,
                "fork_step": self.fork_step,
                "original": {"records_from": self.sources, "continuation": self.continuation},
                "outcome": self.outcome(),
                "lowest": self.lowest.name if self.lowest else None,
                "before": self.before,
                "branches": {b.name: b for b in self.branches},
                "checks": self.checks,
                "processes": self.processes,
                "plot": self.plot,
            }
        )

    def write(self, path: Path) -> None:
        """fork.json, written atomically."""
        protocol.write_json(path, self.to_json())


def _finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)
