"""The protocol's command-line flags, defined once in `FLAGS` for argparse and click alike, checked into `ProtocolArgs`.

    args = flags.parse(parts=("model", "optimizer", "rng-torch"))            # argparse, the whole command line
    flags.add_arguments(parser, parts); args = flags.from_namespace(ns, parts)  # inside your own parser
    @flags.click_options(parts) def main(protocol: ProtocolArgs, ...)          # click

Both forms are made from the same table and convert every value with the same `Flag.value`, so a
value means the same on both or is refused by both, naming the flag and the value: a number out
of bounds is never clamped or replaced by a default. `--omit PART[,PART...]` names parts a resume
must NOT restore (a deliberate fault the verifier requires to be caught); `--omit-rng-restore`
names every `rng-*` part. argparse is built with `allow_abbrev=False`: an abbreviation must never
turn one flag into another. With `long_runs`, the flags the chaos test needs are added too:
`--resume auto`, `--until-step`, `--checkpoint-every`, `--keep`, `--pace`.
"""

import argparse
import functools
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from resumeproof.common.errors import ResumeproofError
from resumeproof.common.protocol import (
    AUTO,
    CHECKPOINT_EVERY_FLAG,
    KEEP_FLAG,
    OMIT_FLAG,
    OMIT_RNG_FLAG,
    OUTPUT_FLAG,
    PACE_FLAG,
    PART_NAME,
    RESUME_FLAG,
    STEPS_FLAG,
    UNTIL_STEP_FLAG,
    generator_of,
    rng_part,
)

__all__ = [
    "AUTO", "FLAGS", "Flag", "FlagError", "ProtocolArgs", "add_arguments", "build", "click_options",
    "declared_parts", "from_namespace", "parse",
]  # fmt: skip


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
    Flag(name=KEEP_FLAG, kind=int, minimum=1, default=3, long_run=True, metavar="G",
         help="Generations step_NNNNNN.pt kept (>= 1)."),
    # 0 means no sleep, and is the default; NaN and inf are refused.
    Flag(name=PACE_FLAG, kind=float, minimum=0, default=0.0, long_run=True, metavar="S",
         help="Seconds to sleep after each update, a finite number >= 0 (a testing aid: changes no computed value)."),
)  # fmt: skip
NUMBERS = tuple(flag for flag in FLAGS if flag.kind in (int, float))
AUTO_HELP = f" Or '{AUTO}': the newest valid checkpoint in {OUTPUT_FLAG}, continued in place."


def _flags(long_runs: bool) -> tuple[Flag, ...]:
    return tuple(flag for flag in FLAGS if long_runs or not flag.long_run)


def _help(flag: Flag, parts: Sequence[str], long_runs: bool) -> str:
    return flag.help_for(parts) + (AUTO_HELP if flag.name == RESUME_FLAG and long_runs else "")


def _declared(parts: Iterable[str]) -> tuple[str, ...]:
    """The parts a trainer declares, checked: a bad one is the programmer's mistake (ValueError), not the user's."""
    declared = tuple(parts)
    for part in declared:
        if not isinstance(part, str) or not PART_NAME.fullmatch(part):
            raise ValueError(f"part {part!r}: not a part name (lower-case letters, digits, '_', '.', '-')")
        if declared.count(part) > 1:
            raise ValueError(f"part {part!r}: declared twice")
    return declared


@dataclass(frozen=True, kw_only=True)
class ProtocolArgs:
    output: Path  # run directory: must not exist, unless resuming in place
    steps: int | None = None  # updates this process runs ...
    until_step: int | None = None  # ... or (long runs): until this global step is reached
    resume: Path | None = None  # checkpoint to continue from
    resume_auto: bool = False  # continue in place from the newest valid checkpoint in `output`
    omit: frozenset[str] = frozenset()  # parts NOT restored on resume (a deliberate fault)
    parts: tuple[str, ...] = ()  # every part --omit accepts, in the order the trainer declared them
    checkpoint_every: int = 0  # also write generation step_NNNNNN.pt every K steps (0: never)
    keep: int = 3  # generations kept (>= 1)
    pace: float = 0.0  # seconds to sleep after each update: a testing aid, changes no computed value

    def __post_init__(self) -> None:
        _declared(self.parts)
        undeclared = sorted(self.omit - set(self.parts))
        if undeclared:
            raise ValueError(f"ProtocolArgs.omit names {', '.join(undeclared)}, which parts does not declare")
        for flag in NUMBERS:
            flag.value(getattr(self, flag.dest))  # FlagValueError: the same bounds as on the command line

    def updates_from(self, step: int) -> int:
        """How many updates this process runs when it starts at global step `step`."""
        if self.steps is not None:
            return self.steps
        assert self.until_step is not None
        if self.until_step < step:
            raise FlagError(f"{UNTIL_STEP_FLAG} {self.until_step}: the run is already at step {step}")
        return self.until_step - step

    def restored_generators(self, names: Iterable[str]) -> list[str]:
        """The generators among `names` ('numpy', ...) whose rng part --omit does not name: the ones to restore."""
        return [name for name in names if rng_part(name) not in self.omit]


# The parts declared when the kit's flags were last parsed in this process, for kit.write_summary
# to write as meta.parts. Module state, because write_summary is called far from the flags (by the
# loop, an adapter, kit.distributed) and a trainer must not need a line of its own to pass them on;
# a process parses one command line, so the last declaration is its trainer's.
_declared_parts: tuple[str, ...] | None = None


def declared_parts() -> tuple[str, ...] | None:
    """The parts --omit accepted when the kit's flags were last parsed in this process; None if never."""
    return _declared_parts


def build(parts: Sequence[str], **given: Any) -> ProtocolArgs:
    """ProtocolArgs from the flags' values (as argparse or click parsed them, or text), or a FlagError."""
    global _declared_parts
    declared = _declared(parts)
    long_runs = dest(UNTIL_STEP_FLAG) in given  # the long-run flags were offered
    offered = _flags(long_runs)  # a user's own --keep beside short-run flags is not the protocol's
    # Every flag of the table: one absent or not offered takes the table's default, on both forms.
    value = {flag.dest: flag.value(given.get(flag.dest) if flag in offered else None) for flag in FLAGS}
    steps, until_step, resume = value["steps"], value["until_step"], value["resume"]
    if (steps is None) == (until_step is None):
        raise FlagError(
            f"give exactly one of {STEPS_FLAG} and {UNTIL_STEP_FLAG}" if long_runs else f"{STEPS_FLAG} is required"
        )
    if resume == AUTO and not long_runs:
        raise FlagError(f"{RESUME_FLAG} {AUTO}: this trainer does not continue in place; name the checkpoint")
    omit = _omitted(value["omit"], declared)
    if value["omit_rng_restore"]:
        omit |= {part for part in declared if generator_of(part) is not None}
    if omit and resume is None:
        raise FlagError(f"{OMIT_FLAG} and {OMIT_RNG_FLAG} need {RESUME_FLAG}")
    args = ProtocolArgs(
        output=Path(value["output"]), steps=steps, until_step=until_step,
        resume=None if resume in (None, AUTO) else Path(resume), resume_auto=resume == AUTO,
        omit=frozenset(omit), parts=declared,
        checkpoint_every=value["checkpoint_every"], keep=value["keep"], pace=value["pace"],
    )  # fmt: skip
    _declared_parts = declared
    return args


def _omitted(spec: str | None, parts: tuple[str, ...]) -> set[str]:
    if spec is None:
        return set()
    named = [part.strip() for part in spec.split(",")]
    if "" in named:
        raise FlagError(f"{OMIT_FLAG} {spec!r}: an empty part name; valid parts: {', '.join(parts)}")
    unknown = sorted(set(named) - set(parts))
    if unknown:
        raise FlagError(f"{OMIT_FLAG}: unknown part {', '.join(unknown)}; valid parts: {', '.join(parts)}")
    return set(named)


# -- argparse -------------------------------------------------------------------------------------


def _argparse_type(flag: Flag) -> Callable[[str], Any]:
    def convert(text: str) -> Any:
        try:
            return flag.value(text)
        except FlagValueError as err:
            raise argparse.ArgumentTypeError(err.why) from None  # argparse puts "argument --keep: " before it

    return convert


def add_arguments(parser: argparse.ArgumentParser, parts: Sequence[str], long_runs: bool = False) -> None:
    """Add the protocol's flags to your own parser (build it with allow_abbrev=False); then `from_namespace`."""
    declared = _declared(parts)
    for flag in _flags(long_runs):
        text = _help(flag, declared, long_runs)
        if flag.kind is bool:
            parser.add_argument(flag.name, action="store_true", help=text)
        else:
            # No default here: `build` applies the table's, the same for both forms.
            parser.add_argument(
                flag.name, type=_argparse_type(flag), required=flag.required, metavar=flag.metavar, help=text
            )


def from_namespace(namespace: argparse.Namespace, parts: Sequence[str]) -> ProtocolArgs:
    return build(parts, **vars(namespace))


def parse(
    argv: Sequence[str] | None = None, *, parts: Sequence[str], description: str | None = None, long_runs: bool = False
) -> ProtocolArgs:
    """Parse a command line that holds only the protocol's flags; a bad one exits 2 with argparse's message."""
    parser = argparse.ArgumentParser(description=description, allow_abbrev=False)
    add_arguments(parser, parts, long_runs)
    namespace = parser.parse_args(argv)
    try:
        return from_namespace(namespace, parts)
    except FlagError as err:
        parser.error(str(err))


# -- click ----------------------------------------------------------------------------------------


def click_options(parts: Sequence[str], long_runs: bool = False) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Add the protocol's options to a click command, which receives them as `protocol: ProtocolArgs`."""
    import click  # only click trainers pay for it

    class Checked(click.ParamType):
        """A number converted and checked by the flag's own `Flag.value`, exactly as argparse does."""

        def __init__(self, flag: Flag) -> None:
            self.flag, self.name = flag, flag.metavar or flag.dest

        def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
            try:
                return self.flag.value(value)
            except FlagValueError as err:
                self.fail(err.why, param, ctx)

    declared = _declared(parts)
    table = _flags(long_runs)
    options = [
        click.option(flag.name, is_flag=True, help=_help(flag, declared, long_runs))
        if flag.kind is bool
        else click.option(
            flag.name,
            type=Checked(flag) if flag in NUMBERS else click.STRING,
            required=flag.required,
            metavar=flag.metavar,
            help=_help(flag, declared, long_runs),
        )
        for flag in table
    ]

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(command)
        def wrapper(**values: Any) -> Any:
            given = {flag.dest: values.pop(flag.dest) for flag in table}
            try:
                protocol = build(declared, **given)
            except FlagError as err:
                raise click.UsageError(str(err)) from None
            return command(protocol=protocol, **values)

        for option in reversed(options):
            wrapper = option(wrapper)
        return wrapper

    return decorate
