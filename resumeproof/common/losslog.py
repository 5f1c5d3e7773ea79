"""loss.jsonl: one JSON line per update, appended and fsynced, never rewritten or truncated.

A process killed after logging some updates but before checkpointing them leaves records that
its successor replays from the last checkpoint. Every process first appends a `start` event
naming the step it continues from and the logged steps it supersedes, then logs the replayed
steps with `"replay": true`; a stop on request adds a `stop` event. A reader takes the last
record of each step as the authoritative one (`authoritative` below).
"""

import json
import os
from pathlib import Path
from typing import Any

NAME = "loss.jsonl"
REPLAY = "replay"  # the mark of a record a process logged again after its predecessor was killed


def append(path: Path, entry: dict[str, Any]) -> None:
    with open(path, "ab") as f:
        f.write((json.dumps(entry) + "\n").encode())
        f.flush()
        os.fsync(f.fileno())


def read(path: Path) -> tuple[list[dict[str, Any]], int]:
    """Every entry, and how many lines could not be read (a line cut short by a kill)."""
    entries, broken = [], 0
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                entries.append(json.loads(line))
            except json.JSONDecodeError:
                broken += 1
    return entries, broken


def start(path: Path, step: int, **event: Any) -> set[int]:
    """Open the log for a process that continues from `step`: end a line a kill cut short, record
    the start, and return the logged steps beyond `step` that this process will replay."""
    if path.exists() and path.stat().st_size and not path.read_bytes().endswith(b"\n"):
        with open(path, "ab") as f:
            f.write(b"\n")  # the cut line stays (never rewritten) and reads as broken
    logged = {e["step"] for e in read(path)[0] if "loss" in e}
    superseded = sorted(s for s in logged if s > step)
    append(path, {"event": "start", "from_step": step, "superseded_steps": superseded, **event})
    return set(superseded)


def authoritative(path: Path) -> dict[int, dict[str, Any]]:
    """The last record of each step: what the run's state descends from."""
    records: dict[int, dict[str, Any]] = {}
    for entry in read(path)[0]:
        if "loss" in entry:
            records[entry["step"]] = entry
    return records
