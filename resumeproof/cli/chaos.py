"""`resumeproof chaos` (and `python -B verify_resume.py chaos`): kill, stop and snapshot a long run at random
instants; exit 0 when it lost nothing, 1 when it did, 2 when the test could not complete."""

import shlex
from pathlib import Path
from typing import Any

import click

from resumeproof.cli.common import CONTEXT, DEFAULT_TRAIN_CMD, Command, debug_option, parsed
from resumeproof.common import protocol
from resumeproof.common.errors import EXIT_FAILED, EXIT_PASSED
from resumeproof.verify import settings
from resumeproof.verify.chaos.settings import MIN_PACE, PROCESS, RANK, ChaosSettings

LONG_RUN = (
    protocol.RESUME_FLAG,
    protocol.AUTO,
    protocol.UNTIL_STEP_FLAG,
    protocol.CHECKPOINT_EVERY_FLAG,
    protocol.PACE_FLAG,
)
LONG_RUN_FLAGS = " ".join(LONG_RUN)  # what a trainer under chaos accepts


@click.command(name="chaos", cls=Command, context_settings=CONTEXT)
@click.option("--output", type=click.Path(path_type=Path), required=True, help="Directory for this test.")
@click.option("--kills", type=click.IntRange(min=1), default=20, show_default=True, help="Signals to deliver.")
@click.option("--steps", type=click.IntRange(min=2), default=30, show_default=True, help="The final global step.")
@click.option(
    "--checkpoint-every",
    type=int,
    default=1,
    show_default=True,
    help="Steps between generations (at least 1: signals are aimed inside their writes).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the instants and signals.")
@click.option(
    "--pace",
    type=click.FloatRange(min=MIN_PACE),
    default=0.05,
    show_default=True,
    help="Sleep per step.",
)
@click.option("--timeout", type=click.FloatRange(min=1), default=120.0, show_default=True, help="Seconds per process.")
@click.option(
    "--train-cmd",
    default=DEFAULT_TRAIN_CMD,
    help=f"Training command supporting {LONG_RUN_FLAGS}.  [default: the reference]",
)
@click.option(
    "--kill",
    type=click.Choice((PROCESS, RANK)),
    default=PROCESS,
    show_default=True,
    help="process: signal the trainer; rank: SIGKILL one worker of a torchrun --max-restarts launch.",
)
@debug_option
def run_chaos(train_cmd: str, debug: bool, **options: Any) -> int:
    """Kill, stop and snapshot a long run at random instants; it must lose nothing."""
    from resumeproof.verify.chaos import run as chaos_run
    from resumeproof.verify.report import terminal

    # every other option is a field of ChaosSettings, under its own name
    asked = parsed(lambda: ChaosSettings(train=shlex.split(settings.parse_train_cmd(train_cmd)), **options))
    out = terminal.console()
    with out.status(f"chaos: {asked.kills} signals into a run of {asked.steps} steps"):
        result = chaos_run.run(asked)
    result.write(asked.output / "verification.json")
    terminal.print_chaos(out, result)
    return EXIT_PASSED if result.all_checks_passed else EXIT_FAILED
