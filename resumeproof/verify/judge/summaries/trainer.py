"""Hold every trajectory's summary against the continuous run: the checks, each resume's deviation, the faults.

Determinism comes first: when the trainer differs from itself (verify/judge/summaries/evidence.py), every failed
comparison says so and no part is blamed. Otherwise every run that differs from the continuous one
gets a diagnosis (verify/judge/summaries/diagnosis.py), confirmed by the probes where the rules cannot tell; every
run that must differ is also held against the full resume, so that a fault or a negative control
that computed exactly what the full resume computed is reported as such. The continuous run's output must be
usable: a number that is not finite in the model's or the optimizer's state, the history, `next` or `eval` fails
its own check (verify/judge/summaries/finite.py), whatever the comparisons matched.

`evaluate` hands each trajectory to the function of its expectation: a history prefix, a resume that
must be concordant, the negative control, a fault.
"""

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from resumeproof.common import protocol
from resumeproof.common.flatfile import LOST as FLAT_CAUSE
from resumeproof.common.protocol import CONTINUOUS, FLAT, REPEAT, RESUMED, CheckId, CheckKind
from resumeproof.verify.judge import preemption
from resumeproof.verify.judge.compare import Comparison, compare
from resumeproof.verify.judge.records import first_update
from resumeproof.verify.judge.summaries import evidence, finite, tiers, versions
from resumeproof.verify.judge.summaries.diagnosis import diagnose, identical
from resumeproof.verify.judge.summaries.evidence import Evidence
from resumeproof.verify.judge.summaries.held import NO_RANDOM_STATE, Against, Held, Summaries, compared, resume_entry
from resumeproof.verify.plan import points
from resumeproof.verify.run.summary import Summary
from resumeproof.verify.run.trajectories import Trajectory
from resumeproof.verify.vocabulary.expectation import Expect, Expectation
from resumeproof.verify.vocabulary.findings import Check, Determinism, Diagnosis, Evaluated, Fault


def evaluate(
    trajectories: list[Trajectory],
    summaries: Summaries,
    atol: float,
    parts: tuple[str, ...],
    found: Evidence | None = None,
    tiers_allowed: bool = True,
) -> Evaluated:
    """Check every expectation against the continuous run, with the evidence gathered so far. A trainer that differs
    from itself is judged by the two tiers (verify/judge/summaries/tiers.py) once its repeats ran, unless
    `tiers_allowed` is False (--require-deterministic): then it is not deterministic, and nothing else is said."""
    cont = summaries[CONTINUOUS]
    tried = [k for t in trajectories if (k := _point(t)) is not None]
    cover = points.untried(cont.history, tried, len(cont.history))
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
    checks += [preemption.check(t.outcome.preempted, t.name) for t in trajectories if t.outcome.preempted is not None]
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
        next_lr=cont.next_lr,
        across=found.across,
    )


def _hold(t: Trajectory, against: Against) -> Held:
    """The function of the trajectory's expectation: by its kind, and a divergent one by its check's kind."""
    e = t.expectation
    assert e is not None
    if against.determinism.within_spread:
        return tiers.within_spread(t, e, against)
    if against.found.across is not None and e.kind is Expect.CONCORDANT:
        return versions.held(t, e, against)
    if e.kind is Expect.PREFIX:
        return _prefix(t, e, against)
    if e.kind is Expect.CONCORDANT:
        return _concordant(t, e, against)
    held = _fault(t, e, against) if e.is_fault else _negative_control(t, e, against)
    return versions.must_differ(t, e, against, held) if against.found.across is not None else held


def _prefix(t: Trajectory, e: Expectation, a: Against) -> Held:
    """An interrupted run or a chain's segment: its history is the continuous run's first records."""
    result = compare(a.summaries[t.name].history, a.continuous.history[: e.steps], a.atol, protocol.HISTORY)
    return Held(check=_check(e, result.concordant, result, None if result.concordant else _why(a.determinism, None)))


def _concordant(t: Trajectory, e: Expectation, a: Against) -> Held:
    """A resume that must equal the continuous run; where it does not, why (the primary one confirmed by the
    probes)."""
    other = a.summaries[t.name]
    parts_of, result = compared(a, other)
    why = None if result.concordant else _diagnosis(t, e, a, other)
    resume = resume_entry(a.continuous, other, result, parts_of["state"], why, None)
    return Held(check=_check(e, result.concordant, result, why), resume=resume, nonfinite=tuple(result.nonfinite))


def _negative_control(t: Trajectory, e: Expectation, a: Against) -> Held:
    """The resume without RNG restore must diverge; one that equals the full resume bit for bit says why it
    cannot (no random state restored, or generators unused before the point)."""
    other = a.summaries[t.name]
    parts_of, result = compared(a, other)
    same_as_full = identical(a.summaries[RESUMED], other)
    why = None
    if same_as_full:
        interrupted = a.summaries.get(protocol.INTERRUPTED)
        weak = evidence.no_power(interrupted, a.found.seeded, e.resumed_at, a.parts) if interrupted else None
        why = weak or NO_RANDOM_STATE
    elif not result.concordant:
        why = _diagnosis(t, e, a, other)
    why = _why(a.determinism, why) if not result.concordant or why else None
    negative = resume_entry(a.continuous, other, result, parts_of["state"], why, same_as_full)
    return Held(
        check=_check(e, not result.concordant, result, why), negative=negative, nonfinite=tuple(result.nonfinite)
    )


def _fault(t: Trajectory, e: Expectation, a: Against) -> Held:
    """A resume without one part must diverge: the checks that caught it, and the part it is diagnosed as."""
    other = a.summaries[t.name]
    _, result = compared(a, other)
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
    key = t.name if t.preempt is not None else e.part or ""  # a preempted job's restart without it: its own entry
    return Held(check=_check(e, passed, result, why), fault=(key, fault), nonfinite=tuple(result.nonfinite))


def _diagnosis(t: Trajectory, e: Expectation, a: Against, other: Summary) -> Diagnosis | None:
    """Why a run differs from the continuous one: the first resumed update as the observer saw it (direct evidence,
    judge/records/first_update.py), else the rules on the summaries (judge/summaries/diagnosis.py); then for the primary
    resume the probes that reproduce it exactly; a trainer that differs from itself has every difference explained by
    that."""
    seen = a.found.observed
    rows = _rows_same(a.continuous, other, e.resumed_at)
    reference, mine = _reference(seen, e.resumed_at), seen.get(t.name, {})
    direct = first_update.diagnose(reference, mine, e.resumed_at, a.parts, rows)
    why = direct if direct is not None and direct.lost else diagnose(a.continuous, other, a.context(e))
    if why is not None and why is not direct and _restored(why, direct, reference, mine, e.resumed_at, a.parts):
        why = None  # the summaries name only parts the records show restored: an effect; the records say more
    if direct is not None and (why is None or not why.lost):  # no part named: the direct evidence says more
        why = direct
    if why is not None and t.name == RESUMED:
        why = evidence.confirm(why, other, a.found.probes)
    return _why(a.determinism, why)


def _restored(why: Diagnosis, direct: Diagnosis | None, *records: Any) -> bool:
    """Whether the observer's records, where they tell the first difference, show every part `why` names restored."""
    return direct is not None and bool(why.lost) and set(why.lost) <= first_update.restored(*records)


def _rows_same(continuous: Summary, other: Summary, k: int) -> bool | None:
    """Whether update k+1 consumed the same rows in both runs, as their histories say; None where they cannot."""
    a, b = continuous.rows(k + 1), other.rows(k + 1)
    return None if a is None or b is None else a == b


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


def _prefix_fails(t: Trajectory, cont: Summary, summaries: Summaries, atol: float) -> bool:
    e = t.expectation
    if e is None or e.kind is not Expect.PREFIX:
        return False
    return not compare(summaries[t.name].history, cont.history[: e.steps], atol, protocol.HISTORY).concordant


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
        resumed_at=e.resumed_at or None,  # 0: a run from the start (a prefix, the cadence run)
        first_update=comparison.first_update,
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
        first_update=det.first_step,
        diagnosis=evidence.not_deterministic(det) if det.deterministic is False and not det.within_spread else None,
    )
