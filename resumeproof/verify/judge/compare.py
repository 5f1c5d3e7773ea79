"""Tree comparison of two JSON values, as docs/protocol.md section 4 defines it.

Same structure (keys, lengths, JSON type at every place: an int is not a float), numbers within
`atol` with no relative tolerance, strings, booleans and null equal. NaN never matches. An infinity
matches the same infinity only inside `state` (a stock ReduceLROnPlateau holds `mode_worse = inf`),
and every such place is kept in `nonfinite` so that the report flags it; anywhere else (a loss, an
lr, an eval) a non-finite number is a failure. A match is not a usable output: verify/judge/summaries/finite.py fails
the non-finite numbers of the model's and the optimizer's state. Mismatches are reported by path, e.g.
`history[6].rows`.
"""

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from resumeproof.common.protocol import COMPARED_KEYS, STATE
from resumeproof.verify.run.summary import Summary

MAX_REPORTED = 20  # mismatches kept for the report; the count covers them all


@dataclass(frozen=True)
class Mismatch:
    path: str
    reason: str


@dataclass
class Comparison:
    atol: float
    mismatches: list[Mismatch] = field(default_factory=list)
    count: int = 0  # every mismatch, including those not kept
    caught_by: set[str] = field(default_factory=set)  # the check of every mismatch, see `check_of`
    max_abs_diff: float = 0.0  # over float leaves finite on both sides; ints (counters, row ids) match or not
    equal_infinities: bool = False  # an infinity matches the same infinity (inside `state`)
    nonfinite: list[str] = field(default_factory=list)  # where it did

    @property
    def concordant(self) -> bool:
        return self.count == 0

    @property
    def first_path(self) -> str | None:
        return self.mismatches[0].path if self.mismatches else None

    @property
    def first_update(self) -> int | None:
        """The first update a mismatch of a history record names (`history[5].rows`: update 6), None for none."""
        found = (_RECORD.match(m.path) for m in self.mismatches)
        return next((int(m.group(1)) + 1 for m in found if m), None)

    def add(self, path: str, reason: str) -> None:
        self.count += 1
        self.caught_by.add(check_of(path))
        if len(self.mismatches) < MAX_REPORTED:
            self.mismatches.append(Mismatch(path, reason))


def check_of(path: str) -> str:
    """The check a mismatch belongs to: `history.<field>` for a history record's field, else the
    top-level key (`step`, `history` for its length, `state`, `next`, `eval`, ...)."""
    record = _RECORD_FIELD.match(path)
    return f"history.{record.group(1)}" if record else _HEAD.match(path).group() or "<root>"  # type: ignore[union-attr]


_RECORD_FIELD = re.compile(r"history\[\d+\]\.([^.\[]+)")
_HEAD = re.compile(r"[^.\[]*")
_RECORD = re.compile(r"history\[(\d+)\]")


def json_type(value: Any) -> str:
    # bool before int: in Python, True is an int.
    for name, kind in (("bool", bool), ("int", int), ("float", float), ("string", str)):
        if isinstance(value, kind):
            return name
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    raise TypeError(f"not a JSON value: {type(value).__name__}")


def join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def compare(a: Any, b: Any, atol: float, path: str = "", equal_infinities: bool = False) -> Comparison:
    """Compare two JSON trees; the result lists where they differ, by path below `path`."""
    result = Comparison(atol=atol, equal_infinities=equal_infinities)
    _walk(a, b, path, result)
    return result


def _walk(a: Any, b: Any, path: str, out: Comparison) -> None:
    ta, tb = json_type(a), json_type(b)
    if ta != tb:
        out.add(path, f"type {ta} != {tb}")
    elif ta == "object":
        if a.keys() != b.keys():
            only_a, only_b = sorted(a.keys() - b.keys()), sorted(b.keys() - a.keys())
            out.add(path, f"keys differ: only left {only_a}, only right {only_b}")
        for key in (k for k in a if k in b):
            _walk(a[key], b[key], join(path, key), out)
    elif ta == "array":
        if len(a) != len(b):
            out.add(path, f"length {len(a)} != {len(b)}")
        for i, (x, y) in enumerate(zip(a, b, strict=False)):  # a length mismatch is already reported
            _walk(x, y, join(path, i), out)
    elif ta in ("int", "float"):
        _numbers(a, b, path, out)
    elif a != b:
        out.add(path, f"{a!r} != {b!r}")


def _numbers(a: float, b: float, path: str, out: Comparison) -> None:
    if not all(isinstance(v, int) or math.isfinite(v) for v in (a, b)):
        if out.equal_infinities and math.isinf(a) and a == b:
            out.nonfinite.append(path)
        else:
            out.add(path, f"non-finite value ({a!r} vs {b!r})")
        return
    diff = abs(a - b)  # exact for ints, so huge ints are never rounded into a match
    as_float = float(diff) if diff < 1e308 else math.inf
    if isinstance(a, float):  # a permutation index off by 3 is a mismatch, not a deviation of 3
        out.max_abs_diff = max(out.max_abs_diff, as_float)
    if isinstance(a, int) and isinstance(b, int):  # counters, row ids, permutations: equal or not, no tolerance
        if a != b:
            out.add(path, f"{a} vs {b}: integers differ (by {b - a:+d})")
    elif diff > out.atol:
        out.add(path, f"{a!r} vs {b!r}: |diff| {as_float:.3g} > atol {out.atol:g}")


def compare_keys(a: dict[str, Any], b: dict[str, Any], keys: tuple[str, ...], atol: float) -> dict[str, Comparison]:
    """Compare the named top-level keys of two summaries: one result per key, paths rooted at the key;
    identical infinities match inside `state` only."""
    return {key: compare(a[key], b[key], atol, key, equal_infinities=key == STATE) for key in keys}


def summaries(a: Summary, b: Summary, atol: float) -> "Comparison":
    """Two summaries' compared surfaces (docs/protocol.md section 4) as one result."""
    return merge(compare_keys(a.surfaces, b.surfaces, COMPARED_KEYS, atol).values())


def merge(parts: Iterable[Comparison]) -> Comparison:
    """One result for several: their mismatches in order, all counted, the largest deviation."""
    parts = list(parts)
    merged = Comparison(atol=parts[0].atol, count=sum(p.count for p in parts))
    merged.mismatches = [m for p in parts for m in p.mismatches][:MAX_REPORTED]
    merged.max_abs_diff = max(p.max_abs_diff for p in parts)
    merged.caught_by = set().union(*(p.caught_by for p in parts))
    merged.nonfinite = [path for p in parts for path in p.nonfinite]
    return merged
