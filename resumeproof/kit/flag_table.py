"""The protocol's flags as one table: each flag's name, value type, bounds, default and help, and the one
conversion (`Flag.value`) that argparse, click, `ProtocolArgs` and the objects that use a value all apply.

A number out of bounds is refused with one line naming the flag and the value, never clamped or
replaced by a default; where an object takes such a value directly (`RunDir(keep=...)`), it holds it
to the same flag (`flag(KEEP_FLAG).value(keep)`), so that the rule lives in one place.
"""

import math
import signal
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from resumeproof.common.errors import ResumeproofError
from resumeproof.common.protocol import (
    CHECKPOINT_EVERY_FLAG,
    DEFAULT_KEEP,
    KEEP_FLAG,
    OMIT_FLAG,
    OMIT_RNG_FLAG,
    OUTPUT_FLAG,
    PACE_FLAG,
    REQUEUE_ON_FLAG,
    RESUME_FLAG,
    STEPS_FLAG,
    UNTIL_STEP_FLAG,
)


def dest(flag: str) -> str:
    """The keyword argparse and click both give a flag's value under: '--checkpoint-every' -> 'checkpoint_every'."""
    return flag.removeprefix("--").replace("-", "_")


class FlagError(ResumeproofError):
    """Protocol flags that do not make sense, alone or together."""


class FlagValueError(FlagError):
    """One flag's value outside what the flag means; `why` names the value, the message the flag too."""

    def __init__(self, flag: str, why: str) -> None:
        super().__init__(f"{flag}: {why}")
        self.why = why


@dataclass(frozen=True, kw_only=True)
class Flag:
    """One protocol flag: everything its argparse argument and its click option are made from."""

    name: str  # as typed, from the protocol's vocabulary: "--keep"
    kind: type  # int or float: a number, checked here; str: text (a path, 'auto', a list of parts); bool: a switch
    help: str  # one sentence saying what each value means; "{parts}" becomes the parts --omit accepts
    default: Any = None  # the value when the flag is absent; None: absent, for `build` to judge
    minimum: int | float | None = None  # a number below is refused, never clamped or replaced
    long_run: bool = False  # only with long_runs=True: the chaos test's flags
    required: bool = False
    metavar: str | None = None

    @property
    def dest(self) -> str:
        """The keyword both forms (and ProtocolArgs) give the value under."""
        return dest(self.name)

    def value(self, given: Any) -> Any:
        """The flag's value from what was typed, or what a form already converted (None: absent); checked."""
        if given is None:
            if self.required:
                raise FlagValueError(self.name, "is required")
            return self.default
        if self.kind is int:
            return self._bounded(_whole(given), given)
        if self.kind is float:
            return self._bounded(_finite(given), given)
        return self.kind(given)

    def help_for(self, parts: Sequence[str]) -> str:
        shown = self.help.format(parts=", ".join(parts))
        return shown if self.default in (None, False) else f"{shown} Default {self.default}."

    def _bounded(self, number: float | None, given: Any) -> Any:
        if number is None:
            what = "a whole number" if self.kind is int else "a finite number"
            raise FlagValueError(self.name, f"must be {what}, not {given!r}")
        if self.minimum is not None and number < self.minimum:
            raise FlagValueError(self.name, f"must be at least {self.minimum}, not {given}")
        return number


def _whole(given: Any) -> int | None:
    if isinstance(given, bool):  # an int to Python, never a count to a user
        return None
    if isinstance(given, int):
        return given
    try:
        return int(given) if isinstance(given, str) else None
    except ValueError:
        return None


def _finite(given: Any) -> float | None:
    if isinstance(given, bool) or not isinstance(given, str | int | float):
        return None
    try:
        number = float(given)
    except ValueError:
        return None
    return number if math.isfinite(number) else None  # a pace of NaN or inf seconds means nothing


class SignalName(str):
    """A signal a process can catch, by its name with or without SIG ('USR1', 'SIGUSR1'): held as 'SIGUSR1'."""

    UNCATCHABLE = frozenset({"SIGKILL", "SIGSTOP"})

    def __new__(cls, given: Any) -> "SignalName":
        name = str(given).upper()
        name = name if name.startswith("SIG") else f"SIG{name}"
        if name not in signal.Signals.__members__ or name in cls.UNCATCHABLE:
            raise FlagValueError(REQUEUE_ON_FLAG, f"{given!r} is not a signal a process can catch (USR1, TERM, ...)")
        return super().__new__(cls, name)


# Every flag, once. The order is the order of --help. Per flag, what 0 and negative values mean:
FLAGS = (
    # 0 is meaningful: no update, the state resumed from (or the initial one) written as it is.
    Flag(name=STEPS_FLAG, kind=int, minimum=0, metavar="N", help="Updates this process runs (>= 0)."),
    Flag(name=OUTPUT_FLAG, kind=str, required=True, metavar="DIR", help="Run directory; must not exist."),
    # 'auto' only with the long-run flags: a trainer that cannot continue in place would start afresh.
    Flag(name=RESUME_FLAG, kind=str, metavar="CKPT", help="Checkpoint to continue from."),
    Flag(name=OMIT_RNG_FLAG, kind=bool, help="Resume WITHOUT restoring the random generators (every rng-* part)."),
    Flag(name=OMIT_FLAG, kind=str, metavar="PART[,PART...]", help="Resume WITHOUT restoring: {parts}."),
    # 0 is meaningful: step 0 is a global step; a target behind the resumed step is refused by updates_from.
    Flag(name=UNTIL_STEP_FLAG, kind=int, minimum=0, long_run=True, metavar="N",
         help="Instead of --steps: run until this global step (>= 0)."),
    # 0 means never, and is the default: the final checkpoint.pt is always written.
    Flag(name=CHECKPOINT_EVERY_FLAG, kind=int, minimum=0, default=0, long_run=True, metavar="K",
         help="Also write step_NNNNNN.pt every K steps; 0: never."),
    # 0 is refused: a run keeps at least its newest generation, or --resume auto would have nothing to find.
    Flag(name=KEEP_FLAG, kind=int, minimum=1, default=DEFAULT_KEEP, long_run=True, metavar="G",
         help="Generations step_NNNNNN.pt kept (>= 1)."),
    # 0 means no sleep, and is the default; NaN and inf are refused.
    Flag(name=PACE_FLAG, kind=float, minimum=0, default=0.0, long_run=True, metavar="S",
         help="Seconds to sleep after each update, a finite number >= 0 (a testing aid: changes no computed value)."),
    # Slurm's --signal (USR1 by default in Lightning and here): the job asks to be requeued once it has saved.
    Flag(name=REQUEUE_ON_FLAG, kind=SignalName, long_run=True, metavar="SIG",
         help="In a Slurm job: on this signal (USR1, USR2, TERM, ...) finish the update, write a generation, "
              "`scontrol requeue` the job and exit 0; Slurm starts it again and --resume auto goes on."),
)  # fmt: skip
NUMBERS = tuple(flag for flag in FLAGS if flag.kind in (int, float))


def flag(name: str) -> Flag:
    """The table's entry for a flag: '--keep' -> its Flag."""
    return next(f for f in FLAGS if f.name == name)
