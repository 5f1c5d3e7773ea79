"""Whether the continuous run's output is usable: no number that is not finite where an output is read.

The comparison (verify/judge/compare.py) lets an infinity match the same infinity inside `state`: a stock
ReduceLROnPlateau holds `best` and `mode_worse = inf` by design, and an exact resume of it must pass. A weight or
an optimizer moment that is not finite is another matter: however exactly it resumes, the run's output is not
usable, and the founding protocol flags it instead of accepting it. So the continuous run's history, `next` and
`eval`, and the keys of `state` that name the declared model or optimizer part (`model`, `params`, `net`, `opt`,
...: `parts.part_for`), must hold finite numbers only. The check fails with their paths (exit 1) and blames
no part: nothing was lost. Identical infinities in other parts' bookkeeping still match, listed in `nonfinite`.
"""

import math
from dataclasses import dataclass
from typing import Any

from resumeproof.common.protocol import COMPARED_KEYS, CONTINUOUS, MODEL, OPTIMIZER, STATE, CheckId, CheckKind
from resumeproof.verify.judge.compare import join
from resumeproof.verify.judge.parts import part_for
from resumeproof.verify.run.summary import Summary
from resumeproof.verify.vocabulary.findings import Check

NAME = "continuous: the model's and the optimizer's state, the history, next and eval are finite"
SHOWN = 3  # places named in the check's detail; the count covers them all


@dataclass(frozen=True)
class Unusable:
    """One number that is not finite where an output is read."""

    where: str  # "the model's state", "the history", ...
    path: str
    value: float

    def said(self) -> str:
        return f"in {self.where} at {self.path} ({self.value!r})"


def unusable(summary: Summary, parts: tuple[str, ...]) -> list[Unusable]:
    """Every number of the summary that is not finite where an output is read, in the order the keys are compared."""
    found = []
    for key in COMPARED_KEYS:
        value = summary.surface(key)
        if key != STATE:
            found += [Unusable(f"the {key}" if key == "history" else key, p, v) for p, v in _nonfinite(value, key)]
        elif isinstance(value, dict):
            for name, item in value.items():
                where = _output(str(name), parts)
                found += [Unusable(where, p, v) for p, v in _nonfinite(item, join(STATE, name))] if where else []
    return found


def check(found: list[Unusable]) -> Check:
    """The continuous run's output is usable: its check, failed with the places `unusable` found."""
    detail = None
    if found:
        more = f" and {len(found) - SHOWN} more" if found[SHOWN:] else ""
        shown = ", ".join(u.said() for u in found[:SHOWN]) + more
        head = "non-finite value" if len(found) == 1 else f"{len(found)} non-finite values"
        detail = f"{head} {shown}: not a usable output, however exactly it resumes"
    return Check(
        id=CheckId(kind=CheckKind.FINITE, trajectory=CONTINUOUS),
        name=NAME,
        passed=not found,
        first_mismatch=found[0].path if found else None,
        detail=detail,
    )


def _output(key: str, parts: tuple[str, ...]) -> str | None:
    """What a top-level key of `state` holds when it names the declared model or optimizer part, else None."""
    named = part_for(key, parts)
    if named is None:
        return None
    for concept in (MODEL, OPTIMIZER):
        if named == part_for(concept, parts):
            return f"the {concept}'s state"
    return None


def _nonfinite(value: Any, path: str) -> list[tuple[str, float]]:
    """The floats under `value` that are NaN or infinite, with their paths."""
    if isinstance(value, float):
        return [] if math.isfinite(value) else [(path, value)]
    if isinstance(value, dict):
        return [found for key, item in value.items() for found in _nonfinite(item, join(path, key))]
    if isinstance(value, list):
        return [found for i, item in enumerate(value) for found in _nonfinite(item, join(path, i))]
    return []
