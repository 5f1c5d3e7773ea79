"""The diagnosis corpus's scoring (benchmarks/diagnosis.py): right, vague or wrong, for a case and for each fault.

verification.json is read into the package's own typed result, and every check is found by its identity (kind,
trajectory, part) and every diagnosis by its rule and parts, never by wording.
"""

from dataclasses import dataclass, field

from benchmarks.diagnosis_cases import NO_POWER, NONE, NOT_DETERMINISTIC, UNKNOWN, Case
from resumeproof.common.protocol import CheckKind
from resumeproof.verify.report.result import Verification
from resumeproof.verify.vocabulary.findings import Check

RIGHT, VAGUE, WRONG = "right", "vague", "wrong"
COMPARISONS = (CheckKind.RESUME, CheckKind.PREFIX, CheckKind.CADENCE)


@dataclass(frozen=True, kw_only=True)
class Result:
    """One case, verified and scored."""

    case: str
    expected_exit: int
    exit: int
    verdict: str  # RIGHT or WRONG
    diagnosis: str  # RIGHT, VAGUE or WRONG
    said: str  # the diagnoses that decided it, "where name: parts; ..."
    faults: dict[str, tuple[str, str]] = field(default_factory=dict)
    reason: str  # the verifier's last stderr line
    seconds: float


def said(checks: list[Check]) -> str:
    """What the diagnoses of these checks named, "kind where: named; ...", or "-"."""
    return "; ".join(_said(c) for c in checks) or "-"


def _said(check: Check) -> str:
    return (
        f"{check.id.kind} {check.id.part or check.id.trajectory}: {check.diagnosis.named if check.diagnosis else '-'}"
    )


def score(case: Case, v: Verification | None) -> tuple[str, list[Check]]:
    """right, vague or wrong for the case's diagnosis, and the checks whose diagnoses decided it."""
    if v is None:
        return VAGUE, []
    resumes = [c for c in v.checks if c.id.kind in COMPARISONS and not c.passed and c.diagnosis]
    negative = [c for c in v.of_kind(CheckKind.NEGATIVE_CONTROL) if not c.passed and c.diagnosis]
    blamed = [c for c in resumes + negative if c.diagnosis and c.diagnosis.lost]
    if case.cause == NONE:
        return (WRONG if blamed else RIGHT), blamed
    if case.cause == NOT_DETERMINISTIC:
        return (WRONG if blamed else RIGHT if not v.deterministic else VAGUE), resumes
    if case.cause == NO_POWER:
        powerless = any(c.diagnosis and c.diagnosis.rule == NO_POWER for c in negative)
        return (WRONG if blamed else RIGHT if powerless else VAGUE), negative
    if not v.deterministic:
        return WRONG, resumes  # lost state called non-determinism
    marks = [_mark(case, c.diagnosis.lost) for c in resumes if c.diagnosis]
    if not marks:
        return (RIGHT if UNKNOWN in case.right else VAGUE), []
    return (WRONG if WRONG in marks else RIGHT if all(m == RIGHT for m in marks) else VAGUE), resumes


def _mark(case: Case, parts: tuple[str, ...]) -> str:
    if parts:
        return RIGHT if set(parts) <= case.right_parts else WRONG
    return RIGHT if UNKNOWN in case.right else VAGUE


def score_faults(case: Case, v: Verification | None) -> dict[str, tuple[str, str]]:
    """Per expected fault: (right/vague/wrong, what its diagnosis named); vague when it did not run or names none."""
    scored = {}
    for part in case.faults:
        fault = v.faults.get(part) if v is not None else None
        found = fault.diagnosis if fault is not None else None
        if found is None:
            scored[part] = (VAGUE, "-")
        else:
            mark = VAGUE if not found.lost else RIGHT if found.lost == (part,) else WRONG
            scored[part] = (mark, found.named)
    return scored


def worst(diagnosis: str, faults: dict[str, tuple[str, str]]) -> str:
    """A case that runs faults is only as right as its worst-diagnosed fault."""
    marks = [diagnosis, *(mark for mark, _ in faults.values())]
    return WRONG if WRONG in marks else RIGHT if all(m == RIGHT for m in marks) else VAGUE
