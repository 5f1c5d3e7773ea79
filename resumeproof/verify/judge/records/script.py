"""Judge an unmodified script (`verify --observe`) from the observer's records alone, into the same `Evaluated` a
protocol trainer's summaries give (verify/judge/summaries/trainer.py), so that one report is made from either.

Determinism first: the continuous run against its repeat. Then each resume by the `Expectation` the plan gave it
(verify/plan/script.py), as a protocol trainer's trajectories are: a full resume concordant, the negative control and
each fault divergent. A script that repeats itself is judged bit for bit (judge/records/exact.py): each resume's
restore and every update after it, the negative control and each fault from the primary point. One that differs from
itself is judged in two tiers (judge/records/tiers.py): each restore bit for bit, each trajectory within the
spread its repeats measured.
"""

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TypeVar

from resumeproof.common import observation
from resumeproof.common.protocol import CONTINUOUS, PREEMPTED, REPEAT, REPEATS, CheckKind
from resumeproof.verify.judge import preemption
from resumeproof.verify.judge.records import exact, first_update, tiers, versions
from resumeproof.verify.plan.script import Observed, stopped
from resumeproof.verify.run.launch.preempt import Preempted
from resumeproof.verify.run.trajectories import Trajectory
from resumeproof.verify.settings import Settings
from resumeproof.verify.vocabulary.expectation import Expect, Expectation
from resumeproof.verify.vocabulary.findings import Check, Determinism, Evaluated, Fault, Resume

Records = Mapping[str, Observed]  # trajectory -> its records
Entry = TypeVar("Entry", Resume, Fault)


def read(s: Settings, trajectories: Sequence[Trajectory]) -> dict[str, Observed]:
    """Every trajectory's records, and a preempted job's course read off them (verify/judge/preemption.py), kept in
    its outcome; its restart's records under their own name. Read again, they say the same."""
    records = {t.name: observation.read_all(t.observe.record) for t in trajectories if t.observe}
    for t in trajectories:
        p = t.outcome.preempted
        if p is not None and t.observe is not None and t.name in records:
            base = observation.restarted(str(t.observe.record), {observation.RESTART_ENV: "1"})
            restart = observation.read_all(Path(base))
            t.outcome.preempted = preemption.course(p, records[t.name], restart or None, s.steps)
            records |= {preemption.RESTART: restart} if restart else {}
    return records


def evaluate(s: Settings, trajectories: Sequence[Trajectory], records: Records) -> Evaluated:
    """Every check the records allow, determinism first, then each resume by what the plan expects of it."""
    across = versions.across(records)  # the resumes ran in another environment (judge/records/versions.py)
    records = first_update.repeatable(records)  # a clock kept on a module is no state of the run's
    continuous = records[CONTINUOUS]
    determinism, check = exact.determinism(continuous, records[REPEAT], s.atol)
    held = judged(trajectories)
    preempted = [t.outcome.preempted for t in trajectories if t.outcome.preempted is not None]
    if all(name in records for name in REPEATS[1:]) and determinism.deterministic is False:
        spread = _within_spread(records, held, determinism, check)
        return replace(spread, checks=spread.checks + _preempted(preempted, records, spread))
    checks: list[Check] = [check]
    resumes: dict[str, Resume] = {}
    negative, faults = None, dict[str, Fault]()
    # Within --atol the continuous run may repeat itself and still differ from itself in the last bits: its update
    # k+1 then differs from any resume's in every digest, and only the interrupted process's inputs tell a part.
    bitwise = determinism.deterministic is not False
    if s.atol > 0:  # bit for bit, the judgement above says it already
        bitwise = exact.determinism(continuous, records[REPEAT], 0.0)[0].deterministic is not False
    for t, e in held:
        before, run = records[t.after[0]], records[t.name]
        step = stopped(before)
        if e.kind is Expect.CONCORDANT and across is not None and determinism.deterministic:
            entry, judged_checks = _by_other_code(continuous, run, step, t.name, s.atol)
            resumes[t.name] = entry
            checks += judged_checks
            continue
        if e.kind is Expect.CONCORDANT:
            reference = continuous if determinism.deterministic and bitwise else None
            restored = exact.restore(before, run, step, t.name, reference)
            checks += [restored] if restored is not None else []
            if determinism.deterministic:  # else not comparable: a run that differs from itself loses nothing
                resumes[t.name], check = exact.resume(continuous, run, step, t.name, s.atol)
                said = restored is not None and restored.diagnosis is not None  # the restore's check names it once
                checks.append(replace(check, diagnosis=None) if said or not bitwise else check)
            continue
        if not determinism.deterministic:  # nothing must diverge from a run that differs from itself
            break
        full = records[_full_resume(held, t)]
        unfed = versions.unpowered(continuous, run, step, exact.parts_of(continuous)) if across else None
        if e.is_fault:
            assert e.part is not None
            fault, check = exact.fault(continuous, run, full, step, e.part, s.atol)
            faults[e.part], check = _inputs_only(bitwise, before, run, step, fault, check)
            if unfed is not None and check.passed and check.not_applicable is None:  # under other code: fed otherwise
                faults[e.part] = replace(faults[e.part], detected=False, diagnosis=unfed)
        else:
            control, check = exact.negative(continuous, run, full, step, s.atol)
            negative, check = _inputs_only(bitwise, before, run, step, control, check)
        if unfed is not None and check.passed and check.not_applicable is None:
            check = replace(check, passed=False, detail=unfed.explanation, diagnosis=unfed)
        checks.append(check)
    evaluated = Evaluated(
        checks=checks, resumes=resumes, negative=negative, faults=faults, determinism=determinism, across=across
    )
    return replace(evaluated, checks=checks + _preempted(preempted, records, evaluated, s.atol))


def _by_other_code(continuous: Observed, run: Observed, k: int, name: str, atol: float) -> tuple[Resume, list[Check]]:
    """A resume by other code (records/versions.py): its restore, every part's state bit for bit, then every update
    after it against the continuous run's; where the restore was exact and an update differs, the code moved it."""
    parts = exact.parts_of(continuous)
    restored = versions.restored(name, continuous, run, k, parts)
    entry, check = exact.resume(continuous, run, k, name, atol)
    if restored is not None and not restored.passed:
        entry = replace(entry, diagnosis=restored.diagnosis)
        return entry, [restored, replace(check, diagnosis=None)]  # the restore's check names the part, once
    if not check.passed and restored is not None:
        what = (check.first_mismatch or "").partition(": ")[2] or None
        why = versions.changed(continuous, run, k, parts, (check.first_update, what, check.first_mismatch or ""))
        entry, check = versions.marked(replace(entry, diagnosis=why)), replace(check, diagnosis=why)
    return entry, [*([restored] if restored is not None else []), check]


def _preempted(preempted: list[Preempted], records: Records, judged: Evaluated, atol: float = 0.0) -> list[Check]:
    """A preempted job's course, and where its restart went on from, every update after it against the continuous
    run: bit for bit, or within the measured spread where the script differs from itself. Its `Resume` joins the
    others in `judged`."""
    checks = []
    for p in preempted:
        checks.append(preemption.check(p))
        restart = records.get(preemption.RESTART)
        if restart is None or not p.resumed_from:
            continue
        k, continuous = p.resumed_from[0], records[CONTINUOUS]
        if judged.determinism.within_spread:
            assert judged.determinism.spread is not None
            judged.resumes[PREEMPTED], check = tiers.resume(
                judged.determinism.spread, continuous, restart, k, PREEMPTED, None
            )
        elif judged.determinism.deterministic:
            judged.resumes[PREEMPTED], check = exact.resume(continuous, restart, k, PREEMPTED, atol)
        else:
            continue
        checks.append(check)
    return checks


def judged(trajectories: Sequence[Trajectory]) -> list[tuple[Trajectory, Expectation]]:
    """The resumes the plan expects something of, in the order their checks are reported: every full resume (in the
    order of their interrupted runs), then the negative control, then the faults."""
    order = {t.name: n for n, t in enumerate(trajectories)}
    expect = [(t, t.expectation) for t in trajectories if t.preempt is None and t.expectation is not None]
    held = [(t, e) for t, e in expect if e.makes_check]  # a preempted job is judged by its course (`_preempted`)
    rank = {CheckKind.RESUME: 0, CheckKind.NEGATIVE_CONTROL: 1, CheckKind.FAULT: 2}
    return sorted(held, key=lambda te: (rank[te[1].id.kind], order[te[0].after[0]]))


def _full_resume(held: list[tuple[Trajectory, Expectation]], t: Trajectory) -> str:
    """The full resume from the interrupted run `t` resumed from: what a run that must diverge is also held against."""
    return next(r.name for r, e in held if e.kind is Expect.CONCORDANT and r.after == t.after)


def _inputs_only(
    bitwise: bool, stopped: Observed, run: Observed, k: int, entry: Entry, check: Check
) -> tuple[Entry, Check]:
    """A run that must diverge, diagnosed from the interrupted process's inputs where the continuous run is not
    exactly itself (within --atol): its update k+1 would blame every part on the last bits."""
    if bitwise or check.not_applicable is not None:  # a run that blocked nothing is diagnosed by nothing
        return entry, check
    at = exact.restore(stopped, run, k, check.id.trajectory or "")
    why = at.diagnosis if at is not None and not at.passed else None
    return replace(entry, diagnosis=why), replace(check, diagnosis=why)


def _within_spread(
    records: Records, held: list[tuple[Trajectory, Expectation]], determinism: Determinism, check: Check
) -> Evaluated:
    """A script that differs from itself: each resume by its restore and its trajectory within the measured spread,
    the negative control and the faults at their restore (verify/judge/records/tiers.py)."""
    band = tiers.measured({name: records[name] for name in (CONTINUOUS, *REPEATS)})
    name = "the script differs from itself: each resume is judged by its restore and its measured spread"
    checks: list[Check] = [replace(check, name=name, passed=True)]
    resumes: dict[str, Resume] = {}
    negative, faults = None, dict[str, Fault]()
    for t, e in held:
        before, run = records[t.after[0]], records[t.name]
        step = stopped(before)
        if e.kind is Expect.CONCORDANT:
            restored = exact.restore(before, run, step, t.name)
            checks += [restored] if restored is not None else []
            resumes[t.name], check = tiers.resume(band, records[CONTINUOUS], run, step, t.name, restored)
        elif e.is_fault:
            assert e.part is not None
            faults[e.part], check = tiers.fault(before, run, step, e.part)
        else:
            negative, check = tiers.negative(before, run, step)
        checks.append(check)
    assert negative is not None, "the plan always holds the negative control"
    spread = replace(determinism, spread=band)
    return Evaluated(checks=checks, resumes=resumes, negative=negative, faults=faults, determinism=spread)
