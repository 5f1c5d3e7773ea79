"""The one exception every refusal and failure derives from, and the one place that makes it an exit code.

Helpers raise a `ResumeproofError` whose message is one line naming what the user typed or the
file at fault. Only a command-line entry point turns it into `PROG: error: ...` and exit 2, and
`--debug` shows the traceback instead.
"""

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

EXIT_PASSED, EXIT_FAILED, EXIT_ERROR = 0, 1, 2


class ResumeproofError(Exception):
    """Something a user can act on: a bad input, a refused file, a run that could not complete."""


def refuse_existing(path: Path, flag: str = "--output") -> None:
    """An output that exists is never merged into or overwritten."""
    if path.exists() or path.is_symlink():
        raise ResumeproofError(f"{flag} {path}: already exists; refusing to touch it")


def one_line(err: BaseException) -> str:
    text = " ".join(str(err).split())
    return text or type(err).__name__


@contextmanager
def exit_on_error(prog: str, debug: bool) -> Iterator[None]:
    """Turn a ResumeproofError or OSError into one line on stderr and exit 2 (a traceback with --debug)."""
    try:
        yield
    except (ResumeproofError, OSError) as err:
        if debug:
            raise
        print(f"{prog}: error: {one_line(err)}", file=sys.stderr)
        sys.exit(EXIT_ERROR)
