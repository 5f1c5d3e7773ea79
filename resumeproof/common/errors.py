"""The one exception every refusal and failure derives from, and how it ends a process.

Helpers raise a `ResumeproofError` whose message is one line naming what the user typed or the
file at fault; they never exit. What ends a process is its outermost layer: the `resumeproof`
command's one error path (cli/common.py), a trainer's `exit_on_error` or the kit's entry points
(kit/run.py), each printing `PROG: error: ...` and leaving with exit 2; `--debug` shows the
traceback instead.
"""

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

EXIT_PASSED, EXIT_FAILED, EXIT_ERROR = 0, 1, 2


class ResumeproofError(Exception):
    """Something a user can act on: a bad input, a refused file, a run that could not complete."""


USER_ERRORS = (ResumeproofError, OSError)  # what ends a process with one line: an OSError is the user's too (no file)


def refuse_existing(path: Path, flag: str = "--output") -> None:
    """An output that exists is never merged into or overwritten."""
    if path.exists() or path.is_symlink():
        raise ResumeproofError(f"{flag} {path}: already exists; refusing to touch it")


def one_line(err: BaseException) -> str:
    text = " ".join(str(err).split())
    return text or type(err).__name__


def error_exit(prog: str, err: BaseException) -> SystemExit:
    """`err` as one line on stderr; the exit (2) for the caller to raise: `raise error_exit(prog, err) from None`."""
    print(f"{prog}: error: {one_line(err)}", file=sys.stderr)
    return SystemExit(EXIT_ERROR)


@contextmanager
def exit_on_error(prog: str, debug: bool) -> Iterator[None]:
    """Around a trainer's body: a ResumeproofError or OSError ends the process with one line on stderr and exit 2
    (its traceback with --debug); any other exception is left to raise."""
    try:
        yield
    except USER_ERRORS as err:
        if debug:
            raise
        raise error_exit(prog, err) from None
