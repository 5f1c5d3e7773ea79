"""What every command of the `resumeproof` CLI shares: the help flags, `--debug`, the name the user typed, and
an option parser's refusal as a usage error."""

import shlex
import sys
from collections.abc import Callable
from typing import Any

import click

from resumeproof.verify.settings import SettingsError

DEFAULT_TRAIN_CMD = shlex.join([sys.executable, "-B", "-m", "resumeproof.reference"])  # the packaged reference trainer
CONTEXT = {"help_option_names": ["-h", "--help"]}


def debug_option(command: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--debug", is_flag=True, help="Show tracebacks instead of one-line errors.")(command)


def timeout_option(said: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """--timeout: the seconds a training process may run before it is killed (`said` says which process)."""
    return click.option(
        "--timeout", type=click.FloatRange(min=0, min_open=True), default=600.0, show_default=True, help=said
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
