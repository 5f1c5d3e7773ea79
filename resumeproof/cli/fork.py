"""`resumeproof fork`: run two or more branches forward from one checkpoint, each with its own configuration, and say
whether the comparison is fair and which ended lower; exit 0 fair, 1 not fair, 2 could not complete (docs/fork.md)."""

from pathlib import Path

import click

from resumeproof.cli.common import (
    CONTEXT,
    DEFAULT_TRAIN_CMD,
    Command,
    debug_option,
    jobs_option,
    parsed,
    timeout_option,
)
from resumeproof.common.errors import EXIT_ERROR, EXIT_FAILED, EXIT_PASSED
from resumeproof.verify.fork.plan import ForkSettings, parse_branch


@click.command(name="fork", cls=Command, context_settings=CONTEXT)
@click.argument("checkpoint", type=click.Path(path_type=Path))
@click.option(
    "--branch",
    "branches",
    multiple=True,
    required=True,
    metavar="NAME=OVERRIDES",
    help="A branch and the flags appended to its command, e.g. 'low=--pivot lr=0.01' (two or more; a control "
    "without overrides runs besides them).",
)
@click.option("--steps", type=int, required=True, help="N: updates each branch runs from CHECKPOINT.")
@click.option(
    "--output", type=click.Path(path_type=Path), required=True, help="Directory for the fork: absent or empty."
)
@click.option(
    "--train-cmd",
    default=DEFAULT_TRAIN_CMD,
    help="Training command (docs/protocol.md); flags every branch shares go here.  [default: the bundled reference "
    "trainer, whose overrides are --pivot]",
)
@jobs_option
@timeout_option("a branch")
@click.option("--no-plot", is_flag=True, help="Do not write DIR/fork.png (it needs the 'plot' extra: matplotlib).")
@debug_option
def run_fork(
    checkpoint: Path,
    branches: tuple[str, ...],
    steps: int,
    output: Path,
    train_cmd: str,
    jobs: int,
    timeout: float,
    no_plot: bool,
    debug: bool,
) -> int:
    """Run branches forward from CHECKPOINT, each with its overrides, and prove the comparison fair."""
    from resumeproof.verify.fork import report as fork_report
    from resumeproof.verify.fork import run as fork_run
    from resumeproof.verify.report import terminal
    from resumeproof.verify.report.plot import INSTALL, available

    asked = parsed(
        lambda: ForkSettings(
            checkpoint=checkpoint,
            branches=tuple(parse_branch(text) for text in branches),
            steps=steps,
            output=output,
            train_cmd=train_cmd,
            jobs=jobs,
            timeout=timeout,
            plot=not no_plot,
        )
    )
    if asked.plot and not available():
        raise click.UsageError(f"fork.png needs matplotlib, the 'plot' extra: {INSTALL} (or pass --no-plot)")
    out = terminal.console()
    result = fork_run.fork(asked, out)
    fork_report.print_fork(out, result)
    return EXIT_ERROR if result.error else EXIT_PASSED if result.fair else EXIT_FAILED
