"""resume-protocol/1 (docs/protocol.md): the names both sides use, and the JSON that keeps every float64 bit."""

import json
from typing import Any

from resumeproof.common.errors import ResumeproofError

PROTOCOL = "resume-protocol/1"
CHECKPOINT, SUMMARY = "checkpoint.pt", "summary.json"
COMPARED_KEYS = ("step", "history", "state", "next", "eval")  # everything except `meta`
RECORD_KEYS = {"step": int, "rows": list, "lr": float, "loss": float}


class ProtocolError(ResumeproofError):
    """A trajectory's files do not follow resume-protocol/1."""


def dumps(value: Any) -> str:
    """JSON text in which every float64 reads back bit-identical (Python's repr)."""
    return json.dumps(value, indent=1, allow_nan=True) + "\n"


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
