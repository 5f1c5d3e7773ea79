"""The trainer's distributed flags: which reduction turns the ranks' shards into one update, and the gloo timeout."""

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from resumeproof.common import protocol, runfiles
from resumeproof.common.errors import ResumeproofError

DDP, CANONICAL, FSDP, FSDP_CANONICAL = "ddp", "canonical", "fsdp", "fsdp-canonical"
REDUCTIONS = (DDP, CANONICAL, FSDP, FSDP_CANONICAL)
DEFAULT_REDUCTION = DDP  # what users run
DEFAULT_TIMEOUT = 30.0  # seconds a collective waits for a rank that hangs (a dead one is noticed at once)
TIMEOUT_FLAG, REDUCTION_FLAG = "--dist-timeout", "--reduction"


@dataclass(frozen=True, kw_only=True)
class Options:
    reduction: str | None = None  # --reduction; None: the default under a launcher, refused without one
    timeout: float = DEFAULT_TIMEOUT  # --dist-timeout: the process group's timeout

    def __post_init__(self) -> None:
        if self.reduction is not None and self.reduction not in REDUCTIONS:
            raise ResumeproofError(f"{REDUCTION_FLAG} {self.reduction}: one of {', '.join(REDUCTIONS)}")
        timeout_seconds(self.timeout)

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


def timeout_seconds(given: Any) -> float:
    """A process group's timeout: a finite number of seconds > 0 (an infinite one overflows `timedelta`, and a
    rank that hangs must fail the run, not stall it forever)."""
    try:
        seconds = float(given)
    except (TypeError, ValueError):
        seconds = math.nan
    if isinstance(given, bool) or not (math.isfinite(seconds) and seconds > 0):
        raise ResumeproofError(f"{TIMEOUT_FLAG} {given}: must be a finite number of seconds > 0")
    return seconds


def click_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Add --reduction and --dist-timeout to a click command, which receives them as `distributed: Options`."""
    import click

    def checked(ctx: click.Context, param: click.Parameter, value: Any) -> float:
        try:
            return timeout_seconds(value)
        except ResumeproofError as err:
            raise click.BadParameter(str(err).removeprefix(f"{TIMEOUT_FLAG} ")) from None

    @functools.wraps(command)
    def wrapper(reduction: str | None, dist_timeout: float, **values: Any) -> Any:
        return command(distributed=Options(reduction=reduction, timeout=dist_timeout), **values)

    wrapper = click.option(
        TIMEOUT_FLAG,
        type=click.STRING,  # the text as typed, which the refusal quotes; checked by timeout_seconds
        metavar="SECONDS",
        default=DEFAULT_TIMEOUT,
        show_default=True,
        callback=checked,
        help="Under torchrun: seconds a collective waits for a rank before the run fails.",
    )(wrapper)
    return click.option(
        REDUCTION_FLAG,
        type=click.Choice(REDUCTIONS),
        help=f"Under torchrun: how the ranks' gradients become one update  [default: {DEFAULT_REDUCTION}].",
    )(wrapper)
