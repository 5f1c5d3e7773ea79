"""The protocol's command-line flags for argparse and click alike, made from one table (`FLAGS`,
kit/flag_table.py) and checked into `ProtocolArgs`, which carries the parts the trainer declares.

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
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from resumeproof.common.protocol import (
    AUTO,
    DEFAULT_KEEP,
    META_OMITTED,
    META_PARTS,
    OMIT_FLAG,
    OMIT_RNG_FLAG,
    OUTPUT_FLAG,
    PART_NAME,
    REQUEUE_ON_FLAG,
    RESUME_FLAG,
    STEPS_FLAG,
    UNTIL_STEP_FLAG,
    generator_of,
    rng_part,
)
from resumeproof.kit.flag_table import FLAGS, NUMBERS, Flag, FlagError, FlagValueError, dest
from resumeproof.kit.requeue import JOB_ID

__all__ = [
    "AUTO",
    "FLAGS",
    "Flag",
    "FlagError",
    "ProtocolArgs",
    "add_arguments",
    "build",
    "click_options",
    "from_namespace",
    "parse",
]
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
    keep: int = DEFAULT_KEEP  # generations kept (>= 1)
    pace: float = 0.0  # seconds to sleep after each update: a testing aid, changes no computed value
    requeue_on: str | None = None  # in a Slurm job: the signal ('SIGUSR1') on which it saves and requeues itself

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

    def meta(self) -> dict[str, list[str]]:
        """What every summary's `meta` says of these flags: the omitted parts (protocol revision 1.1), which a
        fault run must echo, and the declared ones (1.2), which `--faults all` asks for."""
        return {META_OMITTED: sorted(self.omit), META_PARTS: list(self.parts)}

    def withdrawn(self, part: str, why: str) -> "ProtocolArgs":
        """These flags without a declared part this run turns out not to have (no GradScaler, no other ranks):
        `--omit` naming it is refused with `why`, and `meta.parts` leaves it out."""
        if part in self.omit:
            raise FlagError(f"{OMIT_FLAG}={part}: {why}; there is nothing to omit")
        return replace(self, parts=tuple(p for p in self.parts if p != part))


def build(parts: Sequence[str], **given: Any) -> ProtocolArgs:
    """ProtocolArgs from the flags' values (as argparse or click parsed them, or text), or a FlagError."""
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
    if value["requeue_on"] is not None and not os.environ.get(JOB_ID):  # before anything is created or trained
        raise FlagError(f"{REQUEUE_ON_FLAG}: not in a Slurm job ({JOB_ID} is unset): there is no job to requeue")
    omit = _omitted(value["omit"], declared)
    if value["omit_rng_restore"]:
        omit |= {part for part in declared if generator_of(part) is not None}
    if omit and resume is None:
        raise FlagError(f"{OMIT_FLAG} and {OMIT_RNG_FLAG} need {RESUME_FLAG}")
    args = ProtocolArgs(
        output=Path(value["output"]),
        steps=steps,
        until_step=until_step,
        resume=None if resume in (None, AUTO) else Path(resume),
        resume_auto=resume == AUTO,
        omit=frozenset(omit),
        parts=declared,
        checkpoint_every=value["checkpoint_every"],
        keep=value["keep"],
        pace=value["pace"],
        requeue_on=value["requeue_on"],
    )
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
