"""Hold every trajectory's summary against the continuous run: the checks, each resume's deviation, the faults.

Determinism comes first: when the trainer differs from itself (verify/evidence.py), every failed
comparison says so and no part is blamed. Otherwise every run that differs from the continuous one
gets a diagnosis (verify/diagnosis.py), confirmed by the probes where the rules cannot tell; every
run that must differ is also held against the full resume, so that a fault or a negative control
that computed exactly what the full resume computed is reported as such.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from resumeproof.common import protocol
from resumeproof.common.flatfile import LOST as FLAT_CAUSE
from resumeproof.common.protocol import CONTINUOUS, REPEAT, RESUMED, RESUMED_NO_RNG, CheckId, CheckKind
from resumeproof.verify import evidence, points
from resumeproof.verify.compare import Comparison, compare, compare_keys, merge
from resumeproof.verify.diagnosis import Context, diagnose, identical
from resumeproof.verify.evidence import Evidence
from resumeproof.verify.expectation import Expect, Expectation
from resumeproof.verify.findings import CONCORDANT, DIVERGENT, Check, Coverage, Determinism, Diagnosis, Fault, Resume
from resumeproof.verify.settings import FLAT
from resumeproof.verify.trajectories import Trajectory

NO_RANDOM_STATE = Diagnosis(
    lost=(), rule="identical-to-full-resume", step=None,
    evidence="the resume without RNG restore equals the full resume bit for bit",
    explanation="the checkpoint restores no random state, or the trainer ignores --omit-rng-restore",
)  # fmt: skip


@dataclass(frozen=True)
class Evaluated:
    checks: list[Check]
    resumes: dict[str, Resume]
    negative: Resume
    faults: dict[str, Fault]
    determinism: Determinism
    coverage: Coverage
    nonfinite: tuple[str, ...]
    next_lr: Any


def evaluate(
    trajectories: list[Trajectory], summaries: Mapping[str, dict[str, Any]], atol: float, parts: tuple[str, ...],
    found: Evidence | None = None,
) -> Evaluated:  # fmt: skip
    """Check every expectation against the continuous run, with the evidence gathered so far."""
    cont = summaries[CONTINUOUS]
    tried = [k for t in trajectories if (k := _point(t)) is not None]
    cover = points.untried(cont["history"], tried, len(cont["history"]))
    starts = frozenset(k + 1 for k in cover.epoch_boundaries or ())
    judged = [t for t in trajectories if t.expectation is not None and t.expectation.makes_check]
    prefix = next(((t.name, summaries[t.name]) for t in judged if _prefix_fails(t, cont, summaries, atol)), None)
    found = found or Evidence()
    det = evidence.determinism(cont, found.repeat, prefix, atol)
    checks, resumes, faults, nonfinite = [], {}, {}, set()
    negative: Resume | None = None
    for t in judged:
        e, other = t.expectation, summaries[t.name]
        assert e is not None
        if e.kind is Expect.PREFIX:
            result = compare(other["history"], cont["history"][: e.steps], atol, "history")
            checks.append(_check(e, result.concordant, result, None if result.concordant else _why(det, None)))
            continue
        parts_of = compare_keys(cont, other, protocol.COMPARED_KEYS, atol)
        result = merge(parts_of.values())
        nonfinite.update(result.nonfinite)
        context = Context(resumed_at=e.resumed_at, parts=parts, epoch_starts=starts, atol=atol)
        same_as_full = e.kind is Expect.DIVERGENT and identical(summaries[RESUMED], other)
        why = _diagnosis(t, cont, other, context, found, same_as_full, summaries) if not result.concordant or (
            same_as_full and t.name == RESUMED_NO_RNG) else None  # fmt: skip
        why = _why(det, why) if not result.concordant or why else None
        passed = result.concordant == (e.kind is Expect.CONCORDANT)
        checks.append(_check(e, passed, result, why if not passed or e.kind is Expect.DIVERGENT else None))
        if e.is_fault:
            faults[e.part or ""] = _fault(e, passed, result, why, same_as_full)
            continue
        entry = _resume(
            cont, other, result, parts_of["state"], why, same_as_full if e.kind is Expect.DIVERGENT else None
        )
        if t.name == RESUMED_NO_RNG:
            negative = entry
        else:
            resumes[t.name] = entry
    if det.repeated or det.deterministic is False:
        checks.append(_determinism_check(det))
    assert negative is not None, "the plan always holds the negative control"
    return Evaluated(checks, resumes, negative, faults, det, cover, tuple(sorted(nonfinite)), cont["next"]["lr"])


def _diagnosis(
    t: Trajectory, cont: dict, other: dict, context: Context, found: Evidence, same_as_full: bool,
    summaries: Mapping[str, dict[str, Any]],
) -> Diagnosis | None:  # fmt: skip
    """Why a run differs (or, for the negative control, why it does not), from the summaries and the probes."""
    if t.name == RESUMED_NO_RNG and same_as_full:
        interrupted = summaries.get(protocol.INTERRUPTED)
        weak = evidence.no_power(interrupted, found.seeded, context.resumed_at, context.parts) if interrupted else None
        return weak or NO_RANDOM_STATE
    why = diagnose(cont, other, context)
    if why is not None and t.name == RESUMED:
        why = evidence.confirm(why, other, found.probes)
    return why


def _why(det: Determinism, why: Diagnosis | None) -> Diagnosis | None:
    """A trainer that differs from itself has every failed comparison explained by that, and nothing else."""
    return evidence.not_deterministic(det) if det.deterministic is False else why


def _prefix_fails(t: Trajectory, cont: dict, summaries: Mapping[str, dict[str, Any]], atol: float) -> bool:
    e = t.expectation
    if e is None or e.kind is not Expect.PREFIX:
        return False
    return not compare(summaries[t.name]["history"], cont["history"][: e.steps], atol, "history").concordant


def _point(t: Trajectory) -> int | None:
    """The interruption point a resume that must be concordant was tried at."""
    e = t.expectation
    return e.resumed_at if e is not None and e.kind is Expect.CONCORDANT and e.resumed_at else None


def _check(e: Expectation, passed: bool, comparison: Comparison, why: Diagnosis | None) -> Check:
    first = comparison.mismatches[0] if comparison.mismatches else None
    return Check(id=e.id, name=e.name, passed=passed, max_abs_diff=comparison.max_abs_diff,
                 first_mismatch=first.path if first else None, detail=first.reason if first else None,
                 diagnosis=why)  # fmt: skip


def _determinism_check(det: Determinism) -> Check:
    name = "the continuous run repeats itself exactly" if det.repeated else "the trainer is deterministic"
    return Check(
        id=CheckId(kind=CheckKind.DETERMINISM, trajectory=REPEAT if det.repeated else None), name=name,
        passed=det.deterministic is not False, first_mismatch=det.first_mismatch, detail=det.detail,
        diagnosis=evidence.not_deterministic(det) if det.deterministic is False else None,
    )  # fmt: skip


def _fault(e: Expectation, passed: bool, result: Comparison, why: Diagnosis | None, same: bool) -> Fault:
    return Fault(
        detected=passed, cause=FLAT_CAUSE if e.part == FLAT else f"{e.part} not restored",
        caught_by=tuple(sorted(result.caught_by)), first_mismatch=result.first_path,
        max_deviation=result.max_abs_diff, mismatches=result.count, diagnosis=why, identical_to_full_resume=same,
    )  # fmt: skip


def _resume(continuous: dict, other: dict, full: Comparison, state: Comparison, why: Diagnosis | None,
            same: bool | None) -> Resume:  # fmt: skip
    """How far a resume lands from the continuous run, and why it differs where it does."""
    mse, reference = _mse(other), _mse(continuous)
    numbers = protocol.is_number(mse) and protocol.is_number(reference)
    return Resume(
        verdict=CONCORDANT if full.concordant else DIVERGENT, max_state_deviation=state.max_abs_diff,
        max_deviation=full.max_abs_diff, final_mse=mse if protocol.is_number(mse) else None,
        mse_deviation=abs(mse - reference) if numbers else None, mismatches=full.count,
        first_mismatch=full.first_path, diagnosis=why, identical_to_full_resume=same,
    )  # fmt: skip


def _mse(summary: dict[str, Any]) -> Any:
    """eval.mse where the trainer reports one (eval may be any JSON tree)."""
    return summary["eval"].get("mse") if isinstance(summary["eval"], dict) else None
