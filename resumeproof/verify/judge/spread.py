"""A trainer that is not deterministic, held within its own run-to-run spread (docs/checks.md, "A trainer that is not
deterministic").

The spread is measured, never hand-set: the continuous run and its repeats (protocol.REPEATS) are runs of the same
command, and so is every interrupted run for the updates it shares with them. At each update, field by field, the
largest distance between two of them is how far the trainer differs from itself there. Differences between runs
accumulate, so the band at update n is the largest spread up to n (the envelope), times FACTOR; a run is inside
the spread where every float of every update lies within its band from the continuous run's. Anything else a
record holds (row ids, counters, strings, a batch's digest) must equal the continuous run's wherever all the
reference runs agree on it: a trainer whose data order is reproducible must reproduce it. No band is narrower than
FACTOR units in the last place of the values themselves (their float type read off their bits): three runs may round
an average to the same float32 and a fourth one place away. The end state (the
summary's `state`, `next`, `eval`) is held the same way, key by key, against the spread of the runs that ended it.

Why FACTOR: a lost state moves a run by orders of magnitude more than rounding does in the first updates after the
resume, while the distance between two runs of the same command varies from pair to pair by a small factor (their
differences are sums of many rounding errors); 10 is one order of magnitude of room. The band is evidence, not the
proof: what a resume restored is checked bit for bit (the restore tier), whatever the kernels do.
"""

import math
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import combinations
from typing import Any

from resumeproof.common.protocol import CheckId
from resumeproof.verify.judge.compare import compare
from resumeproof.verify.vocabulary.band import FACTOR, VARIES, Band
from resumeproof.verify.vocabulary.findings import OUTSIDE_SPREAD, Check, Diagnosis

Records = Mapping[int, Mapping[str, Any]]  # update -> a record's fields (a history record, an observed update)


@dataclass(frozen=True)
class Run:
    """One run as the band reads it: its records by update, and its end state where it has one to compare."""

    records: Records
    end: Mapping[str, Any] | None = None  # top-level key -> tree (`state`, `next`, `eval`); None: not compared


@dataclass(frozen=True)
class Outside:
    """Where a run first leaves the band."""

    path: str  # `history[6].loss`, `state.model`
    step: int | None  # the update, for a record
    distance: float | None  # None: something other than a float differs where every reference run agrees
    band: float | None

    def said(self) -> str:
        if self.distance is None:
            return f"{self.path} differs where every reference run agrees"
        return f"{self.path} differs by {self.distance:.3g}, outside the band {self.band:.3g}"


def outside(band: Band, continuous: Run, other: Run, prefix: str = "history") -> Outside | None:
    """The first place `other` leaves the band around `continuous`, or None where it stays inside."""
    for n in sorted(other.records):
        mine, theirs = continuous.records.get(n), other.records[n]
        if mine is None:
            return Outside(f"{prefix}[{n - 1}]", n, None, None)
        for field in sorted({*mine, *theirs}):
            found = _held(f"{prefix}[{n - 1}].{field}", n, mine.get(field), theirs.get(field), band.at(n, field))
            if found is not None:
                return found
    if continuous.end is None or other.end is None:
        return None
    for path, spread in sorted(band.end.items()):
        found = _held(path, None, _at(continuous.end, path), _at(other.end, path), band.times(spread))
        if found is not None:
            return found
    return None


def _held(path: str, step: int | None, a: Any, b: Any, band: float | str) -> Outside | None:
    if band == VARIES:
        return None
    d = distance(a, b)
    # Where the reference runs happen to agree (an average that rounds to the same float32 in three runs) the band is
    # as wide as the values' own resolution: a trainer that differs from itself differs there by rounding too.
    limit = max(band if isinstance(band, float) else 0.0, FACTOR * resolution(a, b))
    if d is None or d > limit:
        return Outside(path, step, d, limit)
    return None


def resolution(a: Any, b: Any) -> float:
    """The spacing of the floats two values are written at: for each pair of float leaves, the unit in the last
    place of the coarsest of bfloat16, float16, float32 and float64 that holds both exactly (a float32 written into
    JSON keeps its 24 bits; two values a float64 computation gives are not both float32 but by chance); the largest
    over the leaves."""
    if isinstance(a, dict) and isinstance(b, dict):
        return max((resolution(a[key], b[key]) for key in a if key in b), default=0.0)
    if isinstance(a, list) and isinstance(b, list):
        return max((resolution(x, y) for x, y in zip(a, b, strict=False)), default=0.0)
    if a == b or not (isinstance(a, float) and isinstance(b, float) and math.isfinite(a) and math.isfinite(b)):
        return 0.0  # an equal pair needs no room, whatever type would hold it
    scale = max(abs(a), abs(b))
    for bits, fits in ((7, _bfloat16), (10, _float16), (23, _float32)):
        if fits(a) and fits(b):
            return math.ulp(scale) * 2.0 ** (52 - bits)
    return math.ulp(scale)


def _float32(x: float) -> bool:
    return struct.unpack(">f", struct.pack(">f", x))[0] == x


def _float16(x: float) -> bool:
    try:
        return struct.unpack(">e", struct.pack(">e", x))[0] == x
    except OverflowError:
        return False


def _bfloat16(x: float) -> bool:
    return _float32(x) and struct.pack(">f", x)[2:] == b"\x00\x00"


def distance(a: Any, b: Any) -> float | None:
    """How far apart two JSON values are: their floats' largest difference (infinity where a NaN or an infinity
    differs); None where anything else differs (the structure, an int, a string)."""
    found = compare(a, b, math.inf, equal_infinities=True)
    if not found.concordant:
        return None
    return found.max_abs_diff


def measure(references: Mapping[str, Run]) -> Band:
    """The band the reference runs span: per update and field, the largest distance between two runs that hold it,
    enveloped over the updates before; per end-state key, the largest distance between two runs that ended."""
    steps = sorted({n for run in references.values() for n in run.records})
    updates: dict[int, dict[str, float | None]] = {}
    envelope: dict[str, float] = {}
    for n in steps:
        held = [run.records[n] for run in references.values() if n in run.records]
        fields = sorted({f for record in held for f in record})
        updates[n] = {}
        for field in fields:
            spread = _spread([record.get(field) for record in held])
            if spread is None:
                updates[n][field] = None  # varies in kind: not held at this update
                continue
            envelope[field] = max(envelope.get(field, 0.0), spread)
            updates[n][field] = envelope[field]
    ended = [run.end for run in references.values() if run.end is not None]
    end = {path: _spread([_at(e, path) for e in ended]) for path in _paths(ended)} if len(ended) > 1 else {}
    return Band(runs=tuple(references), updates=updates, end=end)


def _spread(values: list[Any]) -> float | None:
    """The largest distance between two of the values (0 for one), or None where two differ in kind."""
    spread = 0.0
    for a, b in combinations(values, 2):
        d = distance(a, b)
        if d is None:
            return None
        spread = max(spread, d)
    return spread


def _paths(ends: list[Mapping[str, Any]]) -> list[str]:
    """The end-state keys held one by one: each key of `state`, `next` and `eval` that is an object, else the key."""
    paths: set[str] = set()
    for end in ends:
        for key, tree in end.items():
            paths |= {f"{key}.{sub}" for sub in tree} if isinstance(tree, dict) and tree else {key}
    return sorted(paths)


def _at(end: Mapping[str, Any], path: str) -> Any:
    key, _, sub = path.partition(".")
    tree = end.get(key)
    return tree.get(sub) if sub and isinstance(tree, dict) else tree


def outside_check(check_id: CheckId, name: str, outside: Outside | None, restore: Check | None) -> Check:
    """The trajectory tier of one run: inside the band, or where it first left it. Its diagnosis is the restore's
    where the restore differs (the proof names the part), else it names none: state the restore cannot see, or a
    spread its repeats underestimated."""
    why = restore.diagnosis if restore is not None and not restore.passed else None
    if outside is not None and why is None:
        why = outside_diagnosis(outside)
    return Check(
        id=check_id,
        name=name,
        passed=outside is None,
        max_abs_diff=outside.distance if outside is not None else None,
        first_mismatch=outside.path if outside is not None else None,
        detail=outside.said() if outside is not None else None,
        diagnosis=why if outside is not None else None,
        first_update=outside.step if outside is not None else None,
    )


def outside_diagnosis(outside: Outside) -> Diagnosis:
    explanation = (
        "what the resume starts from equals what was saved, yet the run leaves the trainer's own run-to-run spread: "
        "state the summary does not report (a Python attribute, a generator it does not peek) or whose saved value "
        "a fresh start shares at this point, or a spread its repeats underestimate"
    )
    return Diagnosis(lost=(), rule=OUTSIDE_SPREAD, step=outside.step, evidence=outside.said(), explanation=explanation)
