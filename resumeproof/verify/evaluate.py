"""Hold every trajectory's summary against the continuous run: the verdict part of verification.json."""

from collections.abc import Mapping
from typing import Any

from resumeproof.common import protocol
from resumeproof.common.flatfile import LOST as FLAT_CAUSE
from resumeproof.verify.compare import Comparison, compare, compare_keys, merge
from resumeproof.verify.expectation import Expect
from resumeproof.verify.plan import CONTINUOUS, RESUMED, RESUMED_NO_RNG
from resumeproof.verify.settings import FLAT
from resumeproof.verify.trajectories import Trajectory


def evaluate(trajectories: list[Trajectory], summaries: Mapping[str, dict[str, Any]], atol: float) -> dict[str, Any]:
    """Check every expectation against the continuous run."""
    cont = summaries[CONTINUOUS]
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
        checks.append(_check(e.check, passed, result))
        if e.part is None:
            entries[t.name] = _entry(cont, other, result, parts["state"])
        else:
            faults[e.part] = {
                "detected": passed,
                "cause": FLAT_CAUSE if e.part == FLAT else f"{e.part} not restored",
                "caught_by": sorted(result.caught_by),
                "first_mismatch": result.first_path,
                "max_deviation": result.max_abs_diff,
                "mismatches": result.count,
            }
    positive = [c for c, t in zip(checks, _expecting(trajectories), strict=True) if t.kind is not Expect.DIVERGENT]
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
        "next_lr": cont["next"]["lr"],
    }


def _expecting(trajectories: list[Trajectory]) -> list[Any]:
    return [t.expectation for t in trajectories if t.expectation is not None]


def _check(name: str, passed: bool, comparison: Comparison) -> dict[str, Any]:
    first = comparison.mismatches[0] if comparison.mismatches else None
    return {
        "name": name,
        "passed": passed,
        "max_abs_diff": comparison.max_abs_diff,
        "first_mismatch": first.path if first else None,
        "detail": first.reason if first else None,
    }


def _entry(continuous: dict, other: dict, full: Comparison, state: Comparison) -> dict[str, Any]:
    """How far a resume lands from the continuous run."""
    mse, reference = _mse(other), _mse(continuous)
    numbers = protocol.is_number(mse) and protocol.is_number(reference)
    return {
        "verdict": "concordant" if full.concordant else "divergent",
        "max_state_deviation": state.max_abs_diff,
        "max_deviation": full.max_abs_diff,
        "final_mse": mse if protocol.is_number(mse) else None,
        "mse_deviation": abs(mse - reference) if numbers else None,
        "mismatches": full.count,
        "first_mismatch": full.first_path,
    }


def _mse(summary: dict[str, Any]) -> Any:
    """eval.mse where the trainer reports one (eval may be any JSON tree)."""
    return summary["eval"].get("mse") if isinstance(summary["eval"], dict) else None
