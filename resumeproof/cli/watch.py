"""`resumeproof watch`: the restarts of a long run audited where they happen (docs/long-runs.md).

resumeproof watch --run runs/long/watch -- python train.py ...     the command, watched (its exit code)
eval "$(resumeproof watch --run runs/long/watch --env)"             the same for an sbatch script, torchrun
resumeproof watch --report runs/long/watch [--markdown]             the history: exit 1 if a restore differed
"""

import os
import shlex
from pathlib import Path

import click

from resumeproof.cli.common import CONTEXT, Command, debug_option
from resumeproof.common import observation, watching
from resumeproof.common.errors import EXIT_FAILED, EXIT_PASSED


@click.command(name="watch", cls=Command, context_settings=CONTEXT)
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
@click.option(
    "--run",
    type=click.Path(path_type=Path, file_okay=False),
    help="The watch folder: a record beside every checkpoint the run saves, and resumes.jsonl.",
)
@click.option(
    "--on-mismatch",
    type=click.Choice(watching.ON_MISMATCH),
    default=watching.WARN,
    show_default=True,
    help="A restart that did not restore exactly: say so and go on (warn), or end it before its first update "
    f"(stop, exit {watching.STOP_EXIT}).",
)
@click.option("--env", "print_env", is_flag=True, help="Print the environment that watches a run, as shell exports.")
@click.option(
    "--report",
    type=click.Path(path_type=Path, file_okay=False),
    help="Print the resume history of the watch folder REPORT; exit 1 if a restart did not restore exactly.",
)
@click.option("--markdown", is_flag=True, help="With --report: the history as Markdown (a CI job summary).")
@debug_option
def run_watch(
    command: tuple[str, ...],
    run: Path | None,
    on_mismatch: str,
    print_env: bool,
    report: Path | None,
    markdown: bool,
    debug: bool,
) -> int:
    """Watch COMMAND's own restarts: each one that loads a checkpoint the run saved is checked, part by part, before
    its first update (docs/long-runs.md)."""
    if report is not None:
        if command or run is not None or print_env:
            raise click.UsageError("--report takes the watch folder alone")
        return _report(report, markdown)
    if run is None:
        raise click.UsageError("--run is required: the watch folder the records go to")
    env = environment(os.environ, run, on_mismatch)
    if print_env:
        names = ("PYTHONPATH", watching.WATCH_ENV, watching.ON_MISMATCH_ENV)
        click.echo("\n".join(f"export {name}={shlex.quote(env[name])}" for name in names))
        return EXIT_PASSED
    if not command:
        raise click.UsageError("no command to watch: resumeproof watch --run DIR -- COMMAND ...")
    run.mkdir(parents=True, exist_ok=True)
    os.execvpe(command[0], list(command), env)  # the run's own process: its signals, its exit code


def environment(base: os._Environ[str] | dict[str, str], run: Path, on_mismatch: str) -> dict[str, str]:
    """`base` with the observer's sitecustomize first on PYTHONPATH and the watch folder named (absolute: a
    launcher may start the run elsewhere)."""
    watched = {watching.WATCH_ENV: str(run.resolve()), watching.ON_MISMATCH_ENV: on_mismatch}
    return {**base, "PYTHONPATH": observation.site_first(base), **watched}


def _report(run: Path, markdown: bool) -> int:
    from rich.console import Console

    from resumeproof.verify.watch import report

    history = report.read(run)
    if markdown:
        click.echo(report.markdown(history), nl=False)
    else:
        click.echo(report.headline(history))
        Console().print(report.table(history))  # the command's output: stdout
    return EXIT_PASSED if history.exact else EXIT_FAILED
