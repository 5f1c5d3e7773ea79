"""The protocol's command-line flags, for argparse and click trainers alike, checked once into `ProtocolArgs`.

    args = flags.parse(parts=("model", "optimizer", "rng-torch"))            # argparse, the whole command line
    flags.add_arguments(parser, parts); args = flags.from_namespace(ns, parts)  # inside your own parser
    @flags.click_options(parts) def main(protocol: ProtocolArgs, ...)          # click

`--omit PART[,PART...]` names parts a resume must NOT restore (a deliberate fault the verifier
requires to be caught); `--omit-rng-restore` names every `rng-*` part. argparse is built with
`allow_abbrev=False`: an abbreviation must never turn one flag into another. With `long_runs`,
the flags the chaos test needs are added too: `--resume auto`, `--until-step`,
`--checkpoint-every`, `--keep`, `--pace`.
"""

import argparse
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from resumeproof.common.errors import ResumeproofError

AUTO = "auto"  # --resume auto: continue in place in --output from its newest valid checkpoint


class FlagError(ResumeproofError):
    """Protocol flags that do not make sense together."""


@dataclass(frozen=True, kw_only=True)
class ProtocolArgs:
    output: Path  # run directory: must not exist, unless resuming in place
    steps: int | None = None  # updates this process runs ...
    until_step: int | None = None  # ... or (long runs): until this global step is reached
    resume: Path | None = None  # checkpoint to continue from
    resume_auto: bool = False  # continue in place from the newest valid checkpoint in `output`
    omit: frozenset[str] = frozenset()  # parts NOT restored on resume (a deliberate fault)
    checkpoint_every: int = 0  # also write generation step_NNNNNN.pt every K steps (0: never)
    keep: int = 3  # generations kept
    pace: float = 0.0  # seconds to sleep after each update: a testing aid, changes no computed value

    def updates_from(self, step: int) -> int:
        """How many updates this process runs when it starts at global step `step`."""
        if self.steps is not None:
            return self.steps
        assert self.until_step is not None
        if self.until_step < step:
            raise FlagError(f"--until-step {self.until_step}: the run is already at step {step}")
        return self.until_step - step


def build(parts: Sequence[str], **given: Any) -> ProtocolArgs:
    """ProtocolArgs from the flags' values (as argparse or click parsed them), or a FlagError."""
    steps, until_step, resume = given.get("steps"), given.get("until_step"), given.get("resume")
    if (steps is None) == (until_step is None):
        long_runs = "until_step" in given
        raise FlagError("give exactly one of --steps and --until-step" if long_runs else "--steps is required")
    omit = _parts(given.get("omit"), parts)
    if given.get("omit_rng_restore"):
        omit |= {part for part in parts if part.startswith("rng")}
    if omit and resume is None:
        raise FlagError("--omit and --omit-rng-restore need --resume")
    auto = resume == AUTO
    return ProtocolArgs(
        output=Path(given["output"]), steps=steps, until_step=until_step,
        resume=None if resume in (None, AUTO) else Path(resume), resume_auto=auto, omit=frozenset(omit),
        checkpoint_every=given.get("checkpoint_every") or 0, keep=given.get("keep") or 3, pace=given.get("pace") or 0.0,
    )  # fmt: skip


def _parts(spec: str | None, parts: Sequence[str]) -> set[str]:
    named = {part.strip() for part in spec.split(",")} if spec else set()
    unknown = sorted(named - set(parts))
    if unknown:
        raise FlagError(f"--omit: unknown part {', '.join(unknown)}; valid parts: {', '.join(parts)}")
    return named


def _nonnegative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text} is negative")
    return value


def add_arguments(parser: argparse.ArgumentParser, parts: Sequence[str], long_runs: bool = False) -> None:
    parser.add_argument("--steps", type=_nonnegative, help="Updates this process runs.")
    parser.add_argument("--output", required=True, help="Run directory; must not exist.")
    parser.add_argument("--resume", help="Checkpoint to continue from" + (", or 'auto'." if long_runs else "."))
    parser.add_argument("--omit-rng-restore", action="store_true", help="Resume WITHOUT restoring the generators.")
    parser.add_argument("--omit", metavar="PART[,PART...]", help=f"Resume WITHOUT restoring: {', '.join(parts)}.")
    if long_runs:
        parser.add_argument("--until-step", type=_nonnegative, help="Instead of --steps: run until this global step.")
        parser.add_argument("--checkpoint-every", type=_nonnegative, help="Also write step_NNNNNN.pt every K steps.")
        parser.add_argument("--keep", type=_nonnegative, default=3, help="Generations kept (default 3).")
        parser.add_argument("--pace", type=float, default=0.0, help="Sleep after each update (testing aid).")


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


def click_options(parts: Sequence[str], long_runs: bool = False) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Add the protocol's options to a click command, which receives them as `protocol: ProtocolArgs`."""
    import click

    options = [
        click.option("--steps", type=click.IntRange(min=0), help="Updates this process runs."),
        click.option("--output", type=click.Path(path_type=Path), required=True, help="Run directory; must not exist."),
        click.option("--resume", help="Checkpoint to continue from" + (", or 'auto'." if long_runs else ".")),
        click.option("--omit-rng-restore", is_flag=True, help="Resume WITHOUT restoring the random generators."),
        click.option("--omit", metavar="PART[,PART...]", help=f"Resume WITHOUT restoring: {', '.join(parts)}."),
    ]
    if long_runs:
        options += [
            click.option("--until-step", type=click.IntRange(min=0), help="Instead of --steps: run until this step."),
            click.option("--checkpoint-every", type=click.IntRange(min=1), help="Also write step_NNNNNN.pt every K."),
            click.option("--keep", type=click.IntRange(min=1), default=3, show_default=True, help="Generations kept."),
            click.option("--pace", type=click.FloatRange(min=0), default=0.0, help="Sleep after each update (tests)."),
        ]
    names = ("steps", "output", "resume", "omit_rng_restore", "omit", "until_step", "checkpoint_every", "keep", "pace")

    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(command)
        def wrapper(**values: Any) -> Any:
            given = {name: values.pop(name) for name in names if name in values}
            try:
                protocol = build(parts, **given)
            except FlagError as err:
                raise click.UsageError(str(err)) from None
            return command(protocol=protocol, **values)

        for option in reversed(options):
            wrapper = option(wrapper)
        return wrapper

    return decorate
