"""What every command of the `resumeproof` CLI shares: the one error path that turns an outcome into an exit code
(`Command`), the help flags, `--debug`, the name the user typed, and an option parser's refusal as a usage error."""

import logging
import os
import shlex
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

import click

from resumeproof.common.errors import USER_ERRORS, error_exit
from resumeproof.verify.settings import SettingsError

DEFAULT_TRAIN_CMD = shlex.join([sys.executable, "-B", "-m", "resumeproof.reference"])  # the packaged reference trainer
CONTEXT = {"help_option_names": ["-h", "--help"]}


class Command(click.Command):
    """A command whose callback returns its exit code (0 passed, 1 a check failed, 2 could not complete) and raises
    what it cannot complete: the one place that ends the process. A ResumeproofError or OSError becomes
    `PROG: error: ...` on stderr and exit 2, its traceback with --debug; a usage error is click's (exit 2).
    --debug also shows the package's debug log: the traceback behind a refusal that stands for a bug of the
    verifier itself (the weights_only check's internal error)."""

    def invoke(self, ctx: click.Context) -> NoReturn:
        debug = bool(ctx.params.get("debug"))
        try:
            with _debug_log(debug):
                code = super().invoke(ctx)
        except USER_ERRORS as err:
            if debug or isinstance(err, BrokenPipeError):  # a closed pipe: click's own handling
                raise
            raise error_exit(ctx.command_path, err) from None
        ctx.exit(code)


@contextmanager
def _debug_log(debug: bool) -> Iterator[None]:
    """With --debug, the package's debug log on stderr while the command runs."""
    if not debug:
        yield
        return
    logger, handler = logging.getLogger("resumeproof"), logging.StreamHandler()  # stderr
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def debug_option(command: Callable[..., Any]) -> Callable[..., Any]:
    """`--debug`, which Command reads: a callback is given it and need not use it."""
    return click.option("--debug", is_flag=True, help="Show tracebacks instead of one-line errors.")(command)


def jobs_option(command: Callable[..., Any]) -> Callable[..., Any]:
    option = click.option(
        "--jobs", type=click.IntRange(min=1), default=os.cpu_count() or 1, show_default="cores", help="At once."
    )
    return option(command)


def timeout_option(what: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """`--timeout`: the seconds `what` (a trajectory, a branch) may run before it is killed."""
    return click.option(
        "--timeout",
        type=click.FloatRange(min=0, min_open=True),
        default=600.0,
        show_default=True,
        help=f"Seconds {what} may run before it is killed.",
    )


def prog() -> str:
    """The command as the user typed it (`verify_resume.py`, `resumeproof verify`, ...), for error lines."""
    return click.get_current_context().command_path


def parsed(parse: Callable[[], Any]) -> Any:
    """An option parser's SettingsError as click's usage error (exit 2, naming the option)."""
    try:
        return parse()
    except SettingsError as err:
        raise click.BadParameter(err.message, param_hint=err.flag) from None
