"""Validated reading of a trajectory's summary.json (docs/protocol.md, section 3).

The verifier reads every trajectory through `read_summary`, so a malformed summary is refused
with one line naming the file and the problem instead of surfacing later as a KeyError.
"""

import json
from pathlib import Path
from typing import Any

from resumeproof.common.protocol import COMPARED_KEYS, PROTOCOL, RECORD_KEYS, ProtocolError, is_number


def read_summary(path: Path, expected_step: int | None = None) -> dict[str, Any]:
    """Load summary.json and check the shape docs/protocol.md section 3 promises."""
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ProtocolError(f"{path}: missing") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ProtocolError(f"{path}: not valid JSON ({err})") from None
    if not isinstance(summary, dict):
        raise ProtocolError(f"{path}: top level is {type(summary).__name__}, expected an object")
    missing = [key for key in ("protocol", *COMPARED_KEYS) if key not in summary]
    if missing:
        raise ProtocolError(f"{path}: missing {', '.join(missing)}")
    if summary["protocol"] != PROTOCOL:
        raise ProtocolError(f"{path}: protocol is {summary['protocol']!r}, expected {PROTOCOL!r}")
    step = summary["step"]
    if not isinstance(step, int) or isinstance(step, bool) or step < 0:
        raise ProtocolError(f"{path}: step must be a non-negative int, got {step!r}")
    if expected_step is not None and step != expected_step:
        raise ProtocolError(f"{path}: step is {step}, expected {expected_step}")
    _check_history(path, summary["history"], step)
    if not isinstance(summary["next"], dict) or not is_number(summary["next"].get("lr")):
        raise ProtocolError(f"{path}: next.lr must be a number")
    return summary


def _check_history(path: Path, history: Any, step: int) -> None:
    if not isinstance(history, list) or len(history) != step:
        got = len(history) if isinstance(history, list) else type(history).__name__
        raise ProtocolError(f"{path}: history must hold {step} records (one per update), got {got}")
    for i, record in enumerate(history):
        where = f"{path}: history[{i}]"
        if not isinstance(record, dict):
            raise ProtocolError(f"{where} is not an object")
        for key, kind in RECORD_KEYS.items():
            value = record.get(key)
            ok = is_number(value) if kind is float else isinstance(value, kind)
            if not ok or isinstance(value, bool):
                raise ProtocolError(f"{where}.{key} missing or not {kind.__name__}")
        if record["step"] != i + 1:
            raise ProtocolError(f"{where}.step is {record['step']}, expected {i + 1}")
        if not all(isinstance(r, int) and not isinstance(r, bool) for r in record["rows"]):
            raise ProtocolError(f"{where}.rows must be an array of ints")
