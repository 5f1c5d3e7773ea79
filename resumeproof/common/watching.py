"""`resumeproof watch`: what the observer writes beside a long run's own checkpoints, and how a restart is judged.

A run started under `resumeproof watch` (or with `WATCH_ENV` set, docs/long-runs.md) writes into its watch folder:

    processes/HOST-PID.json      the observer's record of each start's first update (common/observation.py)
    saves/DIGEST.json            one per file the run saved with torch.save (DIGEST: the file's own fingerprint;
                                 `DIGEST.rank-R.json` per rank under a launcher): the state the restore must bring
                                 back, as digests, at the moment of the save; once the update after it has
                                 been fed, the batch it was fed (NEXT_BATCH)
    resumes.jsonl                one line per process start that loaded a file the run saved, appended

A restart is judged once, right before its first update changes anything: each part of the state as the saved record
holds it against the same part as the process now holds it (`compare`). Nothing is recorded between checkpoints.

Loaded by its path inside trainers (the observer's sitecustomize), as common/observation.py is: the standard library
only. The part names are the protocol's (common/protocol.py; tests/common/test_watching.py holds them equal).
"""

import json
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

FORMAT = "resumeproof-watch/1"
WATCH_ENV = "RESUMEPROOF_WATCH"  # the watch folder: where the save records and resumes.jsonl go
ON_MISMATCH_ENV = "RESUMEPROOF_WATCH_ON_MISMATCH"  # WARN (default) or STOP
WARN, STOP = "warn", "stop"
ON_MISMATCH = (WARN, STOP)
STOP_EXIT = 3  # a restart that did not restore exactly, stopped before its first update (--on-mismatch stop)
SAVES, RESUMES, PROCESSES = "saves", "resumes.jsonl", "processes"
# What a save record holds, by the observer's record keys (common/observation.py), and the part each one is.
GENERATORS, MODEL, ATTRIBUTES = "generators", "model", "attributes"
OPTIMIZER, GROUPS, SCHEDULERS, SCALERS, AVERAGED = "optimizer", "groups", "schedulers", "scalers", "averaged"
PARTS = {  # record key -> the part it is (the protocol's names; "hyper-parameters" and "attributes" are no part)
    MODEL: "model",
    ATTRIBUTES: "attributes",
    OPTIMIZER: "optimizer",
    GROUPS: "hyper-parameters",
    SCHEDULERS: "scheduler",
    SCALERS: "scaler",
    AVERAGED: "ema",
}
NEXT_BATCH = "next_batch"  # the digest of the batch the update after the save was fed (observation.BATCH's digest)
DATA = "data"  # the part named where a restart's first update is fed another batch, its generators restored
FED_OTHERWISE = "its first update is fed another batch than the update after the save was"
UNFED = "its batch not judged: the saving process made no update after the save"  # a note: killed, or its last save
RNG_PREFIX = "rng-"  # a generator's part: rng-torch, rng-python, rng-numpy, rng-cuda; a kit generator's own name
EXACT, DIFFERS, UNJUDGED = "exact", "differs", "unjudged"  # a restart's status
SHOWN = 3  # names shown of a part's differing entries; the rest counted


def process_record(run: str | Path, host: str, pid: int) -> Path:
    """The observer's record of one start's first update (common/observation.py's format), kept as the evidence its
    resumes.jsonl line was judged from."""
    return Path(run) / PROCESSES / f"{host}-{pid}"


def save_record(run: str | Path, digest: str, rank: int | None) -> Path:
    """Where the record of one saved file goes: by its content's fingerprint, so that a copy or a rename is found."""
    return Path(run) / SAVES / f"{digest}{'' if rank is None else f'.rank-{rank}'}.json"


def find_record(run: str | Path, digest: str, rank: int | None) -> Path | None:
    """The record of a loaded file: this rank's own, else the one rank that saved it (rank 0 saves for all)."""
    for candidate in (save_record(run, digest, rank), save_record(run, digest, None)):
        if candidate.is_file():
            return candidate
    saved = sorted((Path(run) / SAVES).glob(f"{digest}.rank-*.json"))
    return saved[0] if saved else None


def write_atomically(path: Path, text: str) -> None:
    """The whole file or none: a reader never sees a torn record."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    temporary.write_text(text)
    os.replace(temporary, path)


def append_line(path: Path, line: Mapping[str, Any]) -> None:
    """One JSON line appended with one write of the whole line (O_APPEND): restarts of several ranks or jobs
    appending at once never interleave within a line."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = (json.dumps(line, sort_keys=True, allow_nan=True) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


@dataclass(frozen=True)
class Difference:
    """One part that the restart did not bring back as it was saved, and how it differs."""

    part: str
    how: str


def compare(saved: Mapping[str, Any], now: Mapping[str, Any], restores: list[Mapping[str, Any]]) -> list[Difference]:
    """Each part of the saved state against the same part right before the restart's first update. `now` holds the
    same keys as `saved` (the generators as they are at the first update); `restores` every generator restore the
    process made before it ({"group", "generator", "digest"}). A part the save did not record is not judged. The
    batch the first update is fed is held to the one the update after the save was fed where the record has it: the
    data's part where the generators were restored, else said with the generators that may explain it."""
    found: list[Difference] = []
    for key, part in PARTS.items():
        if key in saved and (how := _differs(saved[key], now.get(key))) is not None:
            found.append(Difference(part, how))
    drawn = _generators(saved.get(GENERATORS) or {}, now.get(GENERATORS) or {}, restores)
    fed = now.get(NEXT_BATCH)
    if NEXT_BATCH not in saved or fed is None or fed == saved[NEXT_BATCH]:
        return found + drawn
    if drawn:  # a batch drawn from a generator that differs: the data's position is not what the evidence shows
        return found + [replace(d, how=f"{d.how}; {FED_OTHERWISE}, which it may explain") for d in drawn]
    return [*found, Difference(DATA, FED_OTHERWISE)]


def _differs(saved: Any, now: Any) -> str | None:
    """How one part differs, in words; None where it is the same."""
    if saved == now:
        return None
    if now is None or now == {} or now == []:
        return "nothing of it is held now: it was not restored"
    if isinstance(saved, dict) and isinstance(now, dict):
        return _entries(saved, now)
    if isinstance(saved, list) and isinstance(now, list) and len(saved) == len(now):
        pairs = zip(saved, now, strict=True)
        changed = [_entries(a, b) if isinstance(a, dict) and isinstance(b, dict) else _short(b) for a, b in pairs]
        return "; ".join(
            f"#{n}: {how}" for n, (how, a, b) in enumerate(zip(changed, saved, now, strict=True)) if a != b
        )
    return f"saved {_short(saved)}, now {_short(now)}"


def _entries(saved: Mapping[str, Any], now: Mapping[str, Any]) -> str:
    """Which entries of a mapping (parameters by name, a group's hyper-parameters) differ, missing or were added."""
    missing = [k for k in saved if k not in now]
    added = [k for k in now if k not in saved]
    changed = [k for k in saved if k in now and saved[k] != now[k]]
    said = []
    if changed:
        plain = all(not isinstance(saved[k], str) or len(saved[k]) != 32 for k in changed[:SHOWN])
        shown = [f"{k} (saved {_short(saved[k])}, now {_short(now[k])})" if plain else k for k in changed[:SHOWN]]
        said.append(f"{len(changed)} of {len(saved)} differ: {_listed(shown, len(changed))}")
    if missing:
        said.append(f"{len(missing)} missing: {_listed(missing[:SHOWN], len(missing))}")
    if added:
        said.append(f"{len(added)} not saved: {_listed(added[:SHOWN], len(added))}")
    return "; ".join(said)


def _generators(
    saved: Mapping[str, Any], now: Mapping[str, Any], restores: list[Mapping[str, Any]]
) -> list[Difference]:
    """A generator the run drew from is restored where the process set it to the saved state before its first update
    (a restore, whatever it drew after), or holds that state there."""
    found = []
    for group, states in saved.items():
        for name, digest in states.items():
            set_to = [r["digest"] for r in restores if r.get("group") == group and r.get("generator") == name]
            if digest in set_to or (now.get(group) or {}).get(name) == digest:
                continue
            how = "set to another state (seeded again?)" if set_to else "never set: it was not restored"
            found.append(Difference(f"{RNG_PREFIX}{name}" if group == "global" else name, how))
    return found


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, allow_nan=True) if not isinstance(value, str) else value
    return text if len(text) <= 40 else text[:37] + "..."


def _listed(shown: list[str], total: int) -> str:
    return ", ".join(shown) + (f" and {total - len(shown)} more" if total > len(shown) else "")


@dataclass(frozen=True, kw_only=True)
class Restart:
    """One line of resumes.jsonl: a process start that loaded a file the run saved, and what its restore did."""

    time: str  # when the check ran (UTC, ISO 8601)
    status: str  # EXACT, DIFFERS or UNJUDGED
    checkpoint: str  # the file as the process loaded it
    digest: str  # the file's fingerprint, which found its record
    saved_update: int | None = None  # how many updates the saving process had made
    saved_at: str | None = None  # when it was saved
    saved_by: dict[str, Any] = field(default_factory=dict)  # the saving process: host, pid, rank, job, restart
    process: dict[str, Any] = field(default_factory=dict)  # this process: host, pid, rank, job, restart count
    differences: list[dict[str, str]] = field(default_factory=list)  # [{"part", "how"}]
    note: str | None = None  # why it is unjudged, or what else was loaded
    stopped: bool = False  # --on-mismatch stop ended the process before its first update

    def to_json(self) -> dict[str, Any]:
        return {"format": FORMAT, **asdict(self)}

    def line(self) -> str:
        """The one line the run's log gets."""
        where = f"{self.checkpoint} (saved after update {self.saved_update})"
        if self.status == EXACT:
            return f"resumeproof watch: restored exactly from {where}"
        if self.status == UNJUDGED:
            return f"resumeproof watch: restart from {where} not judged: {self.note}"
        parts = "; ".join(f"{d['part']}: {d['how']}" for d in self.differences)
        then = ", stopped before its first update" if self.stopped else ""
        return f"resumeproof watch: NOT restored exactly from {where}: {parts}{then}"


def read_restarts(run: Path) -> tuple[list[Restart], int]:
    """Every restart resumes.jsonl holds, and how many of its lines could not be read (a torn last line of a process
    killed mid-write is one: counted, never read as a mismatch)."""
    restarts, unread = [], 0
    for text in (run / RESUMES).read_text().splitlines():
        try:
            held = json.loads(text)
            if not isinstance(held, dict) or held.pop("format", None) != FORMAT:
                raise ValueError("not a resumeproof watch line")
            restarts.append(Restart(**held))
        except (ValueError, TypeError):
            unread += 1
    return restarts, unread
