"""Hold every trajectory's summary against the continuous run: the checks, each resume's deviation, the faults.

Determinism comes first: when the trainer differs from itself (verify/evidence.py), every failed
comparison says so and no part is blamed. Otherwise every run that differs from the continuous one
gets a diagnosis (verify/diagnosis.py), confirmed by the probes where the rules cannot tell; every
run that must differ is also held against the full resume, so that a fault or a negative control
that computed exactly what the full resume computed is reported as such. The continuous run's output must be
usable: a number that is not finite in the model's or the optimizer's state, the history, `next` or `eval` fails
its own check (verify/finite.py), whatever the comparisons matched.

`evaluate` hands each trajectory to the function of its expectation: a history prefix, a resume that
must be concordant, the negative control, a fault.
"""

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from resumeproof.common import protocol
from resumeproof.common.flatfile import LOST as FLAT_CAUSE
from resumeproof.common.protocol import CONTINUOUS, REPEAT, RESUMED, CheckId, CheckKind
from resumeproof.verify import evidence, finite, first_update, points, tiers
from resumeproof.verify.compare import Comparison, compare, compare_keys, merge
from resumeproof.verify.diagnosis import Context, diagnose, identical
from resumeproof.verify.evidence import Evidence
from resumeproof.verify.expectation import Expect, Expectation
from resumeproof.verify.findings import (
    CONCORDANT,
    DIVERGENT,
    WITHIN_SPREAD,
    Check,
    Coverage,
    Determinism,
    Diagnosis,
    Fault,
    Resume,
)
from resumeproof.verify.settings import FLAT
from resumeproof.verify.trajectories import Trajectory

Summaries = Mapping[str, dict[str, Any]]
NO_RANDOM_STATE = Diagnosis(
    lost=(),
    rule="identical-to-full-resume",
    step=None,
    evidence="the resume without RNG restore equals the full resume bit for bit",
    explanation="the checkpoint restores no random state, or the trainer ignores --omit-rng-restore",
)


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


@dataclass(frozen=True, kw_only=True)
class Against:
    """What every trajectory is held against: the continuous run, the evidence so far, and how to compare."""

    summaries: Summaries
    atol: float
    parts: tuple[str, ...]  # the trainer's declared parts, or the standard set
    epoch_starts: frozenset[int]  # updates that begin an epoch
    determinism: Determinism
    found: Evidence

    @property
    def continuous(self) -> dict[str, Any]:
        return self.summaries[CONTINUOUS]

    def context(self, e: Expectation) -> Context:
        return Context(resumed_at=e.resumed_at, parts=self.parts, epoch_starts=self.epoch_starts, atol=self.atol)


@dataclass(frozen=True, kw_only=True)
class Held:
    """What one trajectory adds to the evaluation: its check, and its entry where it has one."""

    check: Check
    restore: Check | None = None  # not deterministic: the restore tier's check of a resume (verify/tiers.py)
    resume: Resume | None = None  # a resume that must be concordant
    negative: Resume | None = None  # the negative control
    fault: tuple[str, Fault] | None = None  # the part a fault omits, and how it was caught
    nonfinite: tuple[str, ...] = ()  # paths in `state` where both runs hold the same infinity


def evaluate(
    trajectories: list[Trajectory],
    summaries: Summaries,
    atol: float,
    parts: tuple[str, ...],
    found: Evidence | None = None,
    tiers_allowed: bool = True,
) -> Evaluated:
    """Check every expectation against the continuous run, with the evidence gathered so far. A trainer that differs
    from itself is judged by the two tiers (verify/tiers.py) once its repeats ran, unless `tiers_allowed` is False
    (--require-deterministic): then it is not deterministic, and nothing else is said."""
    cont = summaries[CONTINUOUS]
    tried = [k for t in trajectories if (k := _point(t)) is not None]
    cover = points.untried(cont["history"], tried, len(cont["history"]))
    judged = [t for t in trajectories if t.expectation is not None and t.expectation.makes_check]
    prefix = next(((t.name, summaries[t.name]) for t in judged if _prefix_fails(t, cont, summaries, atol)), None)
    found = found or Evidence()
    det = evidence.determinism(cont, found.repeat, prefix, atol)
    if det.deterministic is False and tiers_allowed:
        det = replace(det, spread=tiers.measured(trajectories, summaries))
    starts = frozenset(k + 1 for k in cover.epoch_boundaries or ())
    against = Against(summaries=summaries, atol=atol, parts=parts, epoch_starts=starts, determinism=det, found=found)
    held = {t.name: _hold(t, against) for t in judged}
    unusable = finite.unusable(cont, parts)  # not finite where an output is read: fails, whatever matched
    checks = [*(c for h in held.values() for c in (h.restore, h.check) if c), finite.check(unusable)]
    if det.repeated or det.deterministic is False:
        checks.append(_determinism_check(det))
    negative = next((h.negative for h in held.values() if h.negative is not None), None)
    assert negative is not None, "the plan always holds the negative control"
    return Evaluated(
        checks=checks,
        resumes={name: h.resume for name, h in held.items() if h.resume is not None},
        negative=negative,
        faults=dict(h.fault for h in held.values() if h.fault is not None),
        determinism=det,
        coverage=cover,
        nonfinite=tuple(sorted({path for h in held.values() for path in h.nonfinite} - {u.path for u in unusable})),
        next_lr=cont["next"]["lr"],
    )


def _hold(t: Trajectory, against: Against) -> Held:
    """The function of the trajectory's expectation: by its kind, and a divergent one by its check's kind."""
    e = t.expectation
    assert e is not None
    if against.determinism.within_spread:
        return _within_spread(t, e, against)
    if e.kind is Expect.PREFIX:
        return _prefix(t, e, against)
    if e.kind is Expect.CONCORDANT:
        return _concordant(t, e, against)
    return _fault(t, e, against) if e.is_fault else _negative_control(t, e, against)


def _prefix(t: Trajectory, e: Expectation, a: Against) -> Held:
    """An interrupted run or a chain's segment: its history is the continuous run's first records."""
    result = compare(a.summaries[t.name]["history"], a.continuous["history"][: e.steps], a.atol, "history")
    return Held(check=_check(e, result.concordant, result, None if result.concordant else _why(a.determinism, None)))


def _concordant(t: Trajectory, e: Expectation, a: Against) -> Held:
    """A resume that must equal the continuous run; where it does not, why (the primary one confirmed by the
    probes)."""
    other = a.summaries[t.name]
    parts_of, result = _compared(a, other)
    why = None if result.concordant else _diagnosis(t, e, a, other)
    resume = _resume(a.continuous, other, result, parts_of["state"], why, None)
    return Held(check=_check(e, result.concordant, result, why), resume=resume, nonfinite=tuple(result.nonfinite))


def _negative_control(t: Trajectory, e: Expectation, a: Against) -> Held:
    """The resume without RNG restore must diverge; one that equals the full resume bit for bit says why it
    cannot (no random state restored, or generators unused before the point)."""
    other = a.summaries[t.name]
    parts_of, result = _compared(a, other)
    same_as_full = identical(a.summaries[RESUMED], other)
    why = None
    if same_as_full:
        interrupted = a.summaries.get(protocol.INTERRUPTED)
        weak = evidence.no_power(interrupted, a.found.seeded, e.resumed_at, a.parts) if interrupted else None
        why = weak or NO_RANDOM_STATE
    elif not result.concordant:
        why = _diagnosis(t, e, a, other)
    why = _why(a.determinism, why) if not result.concordant or why else None
    negative = _resume(a.continuous, other, result, parts_of["state"], why, same_as_full)
    return Held(
        check=_check(e, not result.concordant, result, why), negative=negative, nonfinite=tuple(result.nonfinite)
    )


def _fault(t: Trajectory, e: Expectation, a: Against) -> Held:
    """A resume without one part must diverge: the checks that caught it, and the part it is diagnosed as."""
    other = a.summaries[t.name]
    _, result = _compared(a, other)
    why = None if result.concordant else _diagnosis(t, e, a, other)
    passed = not result.concordant
    fault = Fault(
        detected=passed,
        cause=FLAT_CAUSE if e.part == FLAT else f"{e.part} not restored",
        caught_by=tuple(sorted(result.caught_by)),
        first_mismatch=result.first_path,
        max_deviation=result.max_abs_diff,
        mismatches=result.count,
        diagnosis=why,
        identical_to_full_resume=identical(a.summaries[RESUMED], other),
    )
    return Held(check=_check(e, passed, result, why), fault=(e.part or "", fault), nonfinite=tuple(result.nonfinite))


def _within_spread(t: Trajectory, e: Expectation, a: Against) -> Held:
    """A trainer that differs from itself: each run within its measured spread, each resume's restore bit for bit;
    the negative control and the faults must differ at their restore (verify/tiers.py)."""
    band, other = a.determinism.spread, a.summaries[t.name]
    assert band is not None
    parts_of, result = _compared(a, other)
    outside = band.outside(tiers.run_of(a.continuous), tiers.run_of(other, end=e.kind is not Expect.PREFIX))
    restore = tiers.restored(t, a.summaries, a.parts, e.resumed_at) if t.after else None
    if e.kind in (Expect.PREFIX, Expect.CONCORDANT):
        name = e.name if e.kind is Expect.PREFIX else f"{t.name} (from step {e.resumed_at}) within the measured spread"
        check = tiers.outside_check(e.id, name, outside, restore)
        if e.kind is Expect.PREFIX:
            return Held(check=check)
        resume = _resume(a.continuous, other, result, parts_of["state"], check.diagnosis, None)
        restored = restore.check if restore is not None else None
        verdict = WITHIN_SPREAD if outside is None else DIVERGENT
        return Held(check=check, restore=restored, resume=replace(resume, verdict=verdict))
    # a run that must diverge: at its restore; the flat file's fault, which has no resume of 0 updates, by the band
    differs = not restore.same if restore is not None else outside is not None
    why = restore.check.diagnosis if restore is not None else tiers.outside_diagnosis(outside) if outside else None
    first = restore.check.first_mismatch if restore is not None else outside.path if outside else None
    check = Check(id=e.id, name=f"{e.name} at its restore", passed=differs, first_mismatch=first, diagnosis=why)
    if e.is_fault:
        fault = Fault(
            detected=differs,
            cause=FLAT_CAUSE if e.part == FLAT else f"{e.part} not restored",
            caught_by=restore.caught_by if restore is not None else tuple(sorted(result.caught_by)) if differs else (),
            first_mismatch=first,
            max_deviation=result.max_abs_diff,
            mismatches=(restore.count if restore is not None else result.count) if differs else 0,
            diagnosis=why,
            identical_to_full_resume=identical(a.summaries[RESUMED], other),
        )
        return Held(check=check, fault=(e.part or "", fault))
    why = why if differs else NO_RANDOM_STATE
    negative = _resume(a.continuous, other, result, parts_of["state"], why, identical(a.summaries[RESUMED], other))
    verdict = DIVERGENT if differs else WITHIN_SPREAD
    return Held(check=replace(check, diagnosis=why), negative=replace(negative, verdict=verdict))


def _compared(a: Against, other: dict[str, Any]) -> tuple[dict[str, Comparison], Comparison]:
    """Every compared key of the summary against the continuous run's, and all of them merged."""
    parts_of = compare_keys(a.continuous, other, protocol.COMPARED_KEYS, a.atol)
    return parts_of, merge(parts_of.values())


def _diagnosis(t: Trajectory, e: Expectation, a: Against, other: dict[str, Any]) -> Diagnosis | None:
    """Why a run differs from the continuous one: the first resumed update as the observer saw it (direct evidence,
    verify/first_update.py), else the rules on the summaries (verify/diagnosis.py); then for the primary resume the
    probes that reproduce it exactly; a trainer that differs from itself has every difference explained by that."""
    seen = a.found.observed
    rows = _rows_same(a.continuous, other, e.resumed_at)
    direct = first_update.diagnose(_reference(seen, e.resumed_at), seen.get(t.name, {}), e.resumed_at, a.parts, rows)
    why = direct if direct is not None and direct.lost else diagnose(a.continuous, other, a.context(e))
    if direct is not None and (why is None or not why.lost):  # no part named: the direct evidence says more
        why = direct
    if why is not None and t.name == RESUMED:
        why = evidence.confirm(why, other, a.found.probes)
    return _why(a.determinism, why)


def _rows_same(continuous: dict[str, Any], other: dict[str, Any], k: int) -> bool | None:
    """Whether update k+1 consumed the same rows in both runs, as their histories say; None where they cannot."""
    a, b = (summary.get(protocol.HISTORY) for summary in (continuous, other))
    if not (isinstance(a, list) and isinstance(b, list) and len(a) > k and len(b) > k):
        return None
    rows = [record.get("rows") if isinstance(record, dict) else None for record in (a[k], b[k])]
    return None if None in rows else rows[0] == rows[1]


def _reference(seen: Mapping[str, first_update.Observed], k: int) -> first_update.Observed:
    """The continuous run's records of update k+1, or the repeat's: with --interrupt-at epochs the continuous run
    ran before the points were known, and its repeat (the same command, shown the same) recorded them."""
    for name in (CONTINUOUS, REPEAT):
        records = seen.get(name) or {}
        if records and all(r.at(k + 1) is not None for r in records.values()):
            return records
    return seen.get(CONTINUOUS) or {}


def _why(det: Determinism, why: Diagnosis | None) -> Diagnosis | None:
    """A trainer that differs from itself has every failed comparison explained by that, and nothing else."""
    return evidence.not_deterministic(det) if det.deterministic is False and not det.within_spread else why


def _prefix_fails(t: Trajectory, cont: dict, summaries: Summaries, atol: float) -> bool:
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
    return Check(
        id=e.id,
        name=e.name,
        passed=passed,
        max_abs_diff=comparison.max_abs_diff,
        first_mismatch=first.path if first else None,
        detail=first.reason if first else None,
        diagnosis=why,
    )


def _determinism_check(det: Determinism) -> Check:
    name = "the continuous run repeats itself exactly" if det.repeated else "the trainer is deterministic"
    if det.within_spread:  # said, not failed: the two tiers judge it (--require-deterministic fails it)
        name = "the trainer differs from itself: each resume is judged by its restore and its measured spread"
    return Check(
        id=CheckId(kind=CheckKind.DETERMINISM, trajectory=REPEAT if det.repeated else None),
        name=name,
        passed=det.deterministic is not False or det.within_spread,
        first_mismatch=det.first_mismatch,
        detail=det.detail,
        diagnosis=evidence.not_deterministic(det) if det.deterministic is False and not det.within_spread else None,
    )


def _resume(
    continuous: dict, other: dict, full: Comparison, state: Comparison, why: Diagnosis | None, same: bool | None
) -> Resume:
    """How far a resume lands from the continuous run, and why it differs where it does."""
    mse, reference = _mse(other), _mse(continuous)
    numbers = protocol.is_number(mse) and protocol.is_number(reference)
    return Resume(
        verdict=CONCORDANT if full.concordant else DIVERGENT,
        max_state_deviation=state.max_abs_diff,
        max_deviation=full.max_abs_diff,
        final_mse=mse if protocol.is_number(mse) else None,
        mse_deviation=abs(mse - reference) if numbers else None,
        mismatches=full.count,
        first_mismatch=full.first_path,
        diagnosis=why,
        identical_to_full_resume=same,
    )


def _mse(summary: dict[str, Any]) -> Any:
    """eval.mse where the trainer reports one (eval may be any JSON tree)."""
    return summary["eval"].get("mse") if isinstance(summary["eval"], dict) else None
