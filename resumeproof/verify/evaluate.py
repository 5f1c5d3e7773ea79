"""Hold every trajectory's summary against the continuous run: the verdict part of verification.json.

Every run that differs from the continuous one gets a diagnosis (verify/diagnosis.py); every run
that must differ is also held against the full resume, so that a "fault" or a negative control
that computed exactly what the full resume computed is reported as such.
"""

from collections.abc import Mapping
from typing import Any

from resumeproof.common import protocol
from resumeproof.common.flatfile import LOST as FLAT_CAUSE
from resumeproof.verify import points
from resumeproof.verify.compare import Comparison, compare, compare_keys, merge
from resumeproof.verify.diagnosis import NO_RANDOM_STATE, Diagnosis, diagnose, identical
from resumeproof.verify.expectation import Expect, Expectation
from resumeproof.verify.plan import CONTINUOUS, RESUMED, RESUMED_NO_RNG
from resumeproof.verify.settings import FLAT
from resumeproof.verify.trajectories import Trajectory


def evaluate(trajectories: list[Trajectory], summaries: Mapping[str, dict[str, Any]], atol: float) -> dict[str, Any]:
    """Check every expectation against the continuous run."""
    cont, full = summaries[CONTINUOUS], summaries[RESUMED]
    tried = [k for t in trajectories if (k := _point(t)) is not None]
    coverage = points.untried(cont["history"], tried, len(cont["history"]))
    boundaries = tuple(coverage["epoch_boundaries"] or ())
    checks, entries, faults = [], {}, {}
    for t in trajectories:
        e = t.expectation
        if e is None:
            continue
        other = summaries[t.name]
        if e.kind is Expect.PREFIX:
            result = compare(other["history"], cont["history"][: e.steps], atol, "history")
            checks.append(_check(e.check, result.concordant, result))
            continue
        parts = compare_keys(cont, other, protocol.COMPARED_KEYS, atol)
        result = merge(parts.values())
        passed = result.concordant == (e.kind is Expect.CONCORDANT)
        found = None if result.concordant else diagnose(cont, other, atol, e.resumed_at, boundaries)
        same_as_full = e.kind is Expect.DIVERGENT and identical(full, other, protocol.COMPARED_KEYS)
        if t.name == RESUMED_NO_RNG and same_as_full:
            found = NO_RANDOM_STATE
        checks.append(_check(e.check, passed, result, found if not passed or e.kind is Expect.DIVERGENT else None))
        if not e.is_fault:
            entries[t.name] = _entry(cont, other, result, parts["state"], found, same_as_full, e)
        else:
            faults[e.part] = _fault(e, passed, result, found, same_as_full)
    positive = [c for c, e in zip(checks, _expectations(trajectories), strict=True) if e.kind is not Expect.DIVERGENT]
    return {
        "all_checks_passed": all(c["passed"] for c in checks),
        "positive": all(c["passed"] for c in positive),
        "negative_divergence_detected": entries[RESUMED_NO_RNG]["verdict"] == "divergent",
        "checks": checks,
        "comparison": {
            "full_resume": entries[RESUMED],
            "no_rng_resume": entries[RESUMED_NO_RNG],
            "resumes": {name: entry for name, entry in entries.items() if name != RESUMED_NO_RNG},
        },
        "faults": faults,
        "blind_to": [part for part, fault in faults.items() if not fault["detected"]],
        "coverage": coverage,
        "next_lr": cont["next"]["lr"],
    }


def _point(t: Trajectory) -> int | None:
    """The interruption point a resume that must be concordant was tried at."""
    e = t.expectation
    return e.resumed_at if e is not None and e.kind is Expect.CONCORDANT and e.resumed_at else None


def _expectations(trajectories: list[Trajectory]) -> list[Expectation]:
    return [t.expectation for t in trajectories if t.expectation is not None]


def _check(name: str, passed: bool, comparison: Comparison, found: Diagnosis | None = None) -> dict[str, Any]:
    first = comparison.mismatches[0] if comparison.mismatches else None
    detail = first.reason if first else None
    if found is not None and not passed:
        detail = f"{detail + '; ' if detail else ''}likely lost: {found.lost} ({found.explanation})"
    return {
        "name": name,
        "passed": passed,
        "max_abs_diff": comparison.max_abs_diff,
        "first_mismatch": first.path if first else None,
        "detail": detail,
    }


def _fault(e: Expectation, passed: bool, result: Comparison, found: Diagnosis | None, same: bool) -> dict[str, Any]:
    return {
        "detected": passed,
        "cause": FLAT_CAUSE if e.part == FLAT else f"{e.part} not restored",
        "caught_by": sorted(result.caught_by),
        "first_mismatch": result.first_path,
        "max_deviation": result.max_abs_diff,
        "mismatches": result.count,
        "diagnosis": found.entry() if found else None,
        "identical_to_full_resume": same,
    }


def _entry(
    continuous: dict, other: dict, full: Comparison, state: Comparison, found: Diagnosis | None, same: bool,
    e: Expectation,
) -> dict[str, Any]:  # fmt: skip
    """How far a resume lands from the continuous run, and why it differs where it does."""
    mse, reference = _mse(other), _mse(continuous)
    numbers = protocol.is_number(mse) and protocol.is_number(reference)
    entry = {
        "verdict": "concordant" if full.concordant else "divergent",
        "max_state_deviation": state.max_abs_diff,
        "max_deviation": full.max_abs_diff,
        "final_mse": mse if protocol.is_number(mse) else None,
        "mse_deviation": abs(mse - reference) if numbers else None,
        "mismatches": full.count,
        "first_mismatch": full.first_path,
        "diagnosis": found.entry() if found else None,
    }
    if e.kind is Expect.DIVERGENT:
        entry["identical_to_full_resume"] = same
    return entry


def _mse(summary: dict[str, Any]) -> Any:
    """eval.mse where the trainer reports one (eval may be any JSON tree)."""
    return summary["eval"].get("mse") if isinstance(summary["eval"], dict) else None
