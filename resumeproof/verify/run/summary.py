"""Validated reading of a trajectory's summary.json (docs/protocol.md, section 3), into one typed `Summary`.

The verifier reads every trajectory through `read_summary`, so a malformed summary is refused
with one line naming the file and the problem instead of surfacing later as a KeyError; what
reads a summary afterwards reads its fields, never the document's keys.
"""

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from resumeproof.common import protocol
from resumeproof.common.protocol import COMPARED_KEYS, PROTOCOL, RECORD_KEYS, ProtocolError, is_number

SURFACES = {protocol.STEP: "step", protocol.HISTORY: "history", protocol.STATE: "state", protocol.NEXT: "next"}
SURFACES[protocol.EVAL] = "eval"  # each compared key (COMPARED_KEYS) and the field that holds it


@dataclass(frozen=True)
class Summary:
    """One trajectory's summary: the compared surfaces (section 3) and `meta`, as the trainer wrote them."""

    step: int
    history: list[dict[str, Any]]  # one record per update: RECORD_KEYS, and the trainer's own fields
    state: Any  # whatever the trainer reports of its state
    next: dict[str, Any]  # what the next update would use: `lr`, the generators' next draws
    eval: Any
    meta: dict[str, Any]  # not compared: the declared parts, what a fault omitted, versions, the device

    @classmethod
    def of(cls, document: dict[str, Any]) -> "Summary":
        """A summary from its document (read_summary checked it; a test may build a partial one)."""
        meta = document.get(protocol.META)
        return cls(
            step=document.get(protocol.STEP, 0),
            history=document.get(protocol.HISTORY, []),
            state=document.get(protocol.STATE),
            next=document.get(protocol.NEXT, {}),
            eval=document.get(protocol.EVAL),
            meta=meta if isinstance(meta, dict) else {},
        )

    def surface(self, key: str) -> Any:
        """A compared surface by its protocol key (COMPARED_KEYS): what compare() walks, with its paths."""
        return getattr(self, SURFACES[key])

    @property
    def surfaces(self) -> dict[str, Any]:
        return {key: self.surface(key) for key in COMPARED_KEYS}

    @property
    def next_lr(self) -> Any:
        return self.next.get(protocol.LR)

    def rows(self, update: int) -> list[int] | None:
        """The rows update `update` (counted from 1) consumed, where the history holds it."""
        record = self.history[update - 1] if 0 < update <= len(self.history) else None
        return record.get(protocol.ROWS) if isinstance(record, dict) else None

    @property
    def declared_parts(self) -> tuple[str, ...] | None:
        """`meta.parts`: every part the trainer's --omit accepts, where it declares them."""
        parts = self.meta.get(protocol.META_PARTS)
        if not (
            isinstance(parts, list)
            and parts
            and all(isinstance(p, str) and protocol.PART_NAME.fullmatch(p) for p in parts)
        ):
            return None
        return tuple(parts)


def read_summary(path: Path, expected_step: int | None = None) -> Summary:
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
    return Summary.of(summary)


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
