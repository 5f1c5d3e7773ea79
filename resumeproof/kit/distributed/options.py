"""The trainer's distributed flags: which reduction turns the ranks' shards into one update, and the gloo timeout."""

import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from resumeproof.common import protocol, runfiles
from resumeproof.common.errors import ResumeproofError
from resumeproof.common.protocol import META_PARTS
from resumeproof.kit import flags

DDP, CANONICAL, FSDP, FSDP_CANONICAL = "ddp", "canonical", "fsdp", "fsdp-canonical"
REDUCTIONS = (DDP, CANONICAL, FSDP, FSDP_CANONICAL)
DEFAULT_REDUCTION = DDP  # what users run
DEFAULT_TIMEOUT = 30.0  # seconds a collective waits for a rank that hangs (a dead one is noticed at once)
# Parts a deliberate fault may leave unrestored on every rank but rank 0 (docs/distributed.md).
OTHER_RANKS_DATA, OTHER_RANKS_RNG = "other-ranks.data", "other-ranks.rng"
RANK_PARTS = (OTHER_RANKS_DATA, OTHER_RANKS_RNG)


@dataclass(frozen=True, kw_only=True)
class Options:
    reduction: str | None = None  # --reduction; None: the default under a launcher, refused without one
    timeout: float = DEFAULT_TIMEOUT  # --dist-timeout: the process group's timeout

    def __post_init__(self) -> None:
        if self.reduction is not None and self.reduction not in REDUCTIONS:
            raise ResumeproofError(f"--reduction {self.reduction}: one of {', '.join(REDUCTIONS)}")
        if not self.timeout > 0:
            raise ResumeproofError(f"--dist-timeout {self.timeout}: must be > 0 seconds")

    @property
    def chosen(self) -> str:
        return self.reduction or DEFAULT_REDUCTION


def refuse_other_kind_in_place(run: Path, directories: bool) -> None:
    """--resume auto in `run` by a launcher that writes DCP directories (`directories`) or files: refused, before
    anything is touched, if `run` holds a checkpoint of the other kind. Resuming in place replaces checkpoint.pt
    and the generations by the same names, and a file cannot replace a directory atomically, nor the reverse."""
    if not run.is_dir():
        return
    final = run / protocol.CHECKPOINT
    found = [*([final] if final.exists() else []), *(path for _, path in runfiles.generations(run))]
    other = next((path for path in found if path.is_dir() != directories), None)
    if other is not None:
        written = "by one process (a file)" if directories else "under torchrun (a DCP directory)"
        raise ResumeproofError(
            f"--resume auto: {other} was written {written}; a run directory resumes in place under the launcher"
            f" that wrote it: give --resume {other} and a new --output"
        )


def click_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Add --reduction and --dist-timeout to a click command, which receives them as `distributed: Options`."""
    import click

    @functools.wraps(command)
    def wrapper(reduction: str | None, dist_timeout: float, **values: Any) -> Any:
        return command(distributed=Options(reduction=reduction, timeout=dist_timeout), **values)

    wrapper = click.option(
        "--dist-timeout", type=click.FloatRange(min=0, min_open=True), default=DEFAULT_TIMEOUT, show_default=True,
        help="Under torchrun: seconds a collective waits for a rank before the run fails.",
    )(wrapper)  # fmt: skip
    return click.option(
        "--reduction", type=click.Choice(REDUCTIONS),
        help=f"Under torchrun: how the ranks' gradients become one update  [default: {DEFAULT_REDUCTION}].",
    )(wrapper)  # fmt: skip


def without_rank_parts() -> dict[str, Any]:
    """meta.parts without the rank-local parts, which a run without other ranks refuses: `--faults all`
    asks for exactly what this run's --omit accepts."""
    declared = flags.declared_parts()
    return {} if declared is None else {META_PARTS: [p for p in declared if p not in RANK_PARTS]}
