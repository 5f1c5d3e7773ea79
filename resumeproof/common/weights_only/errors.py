"""The one exception that leaves the weights_only check, and the refusal its parts raise."""

import re

from resumeproof.common.errors import ResumeproofError

_UNPRINTABLE = re.compile(r"[^\x20-\x7e]")
QUOTE_CHARS = 60  # an attacker-chosen name is shown this long at most


class WeightsOnlyError(ResumeproofError):
    """The file is refused: torch.load(weights_only=True) might refuse it, or read it differently."""


class Refusal(Exception):
    """Raised inside the check with a reason; `check` adds the file name and re-raises it as WeightsOnlyError."""


def quote(text: str | bytes, limit: int = QUOTE_CHARS) -> str:
    """A short printable rendering of attacker-chosen text, safe to put in a one-line message."""
    if isinstance(text, bytes):
        text = text.decode("latin-1")
    short = _UNPRINTABLE.sub("?", text[:limit])
    return repr(short + ("..." if len(text) > limit else ""))


def one_line(message: str) -> str:
    return " ".join(message.split())
