"""Judge an unmodified script (`verify --observe`) from the observer's records alone, into the same `Evaluated` a
protocol trainer's summaries give (verify/judge/summaries.py), so that one report is made from either.

Determinism first: the continuous run against its repeat. A script that repeats itself is judged bit for bit
(verify/judge/recorded.py): each resume's restore and every update after it, the negative control and each fault
from the primary point. One that differs from itself is judged in two tiers (verify/judge/recorded_tiers.py): each
restore bit for bit, each trajectory within the spread its repeats measured.
"""

from collections.abc import Mapping
from dataclasses import replace
from typing import TypeVar

from resumeproof.common import observation
from resumeproof.common.protocol import CONTINUOUS, FAULT_PREFIX, REPEAT, REPEATS, RESUMED_NO_RNG
from resumeproof.verify.judge import recorded, recorded_tiers
from resumeproof.verify.judge.findings import Check, Determinism, Evaluated, Fault, Resume
from resumeproof.verify.plan import script as script_plan
from resumeproof.verify.plan.trainer import point_names
from resumeproof.verify.settings import Settings

Observed = dict[int | None, observation.Observation]  # one record per rank (None: a process without a launcher)
Records = Mapping[str, Observed]  # trajectory -> its records
Entry = TypeVar("Entry", Resume, Fault)


def evaluate(s: Settings, records: Records) -> Evaluated:
    """Every check the records allow, determinism first."""
    continuous = records[CONTINUOUS]
    determinism, check = recorded.determinism(continuous, records[REPEAT], s.atol)
    if all(name in records for name in REPEATS[1:]) and determinism.deterministic is False:
        return _within_spread(s, records, determinism, check)
    checks: list[Check] = [check]
    resumes: dict[str, Resume] = {}
    # Within --atol the continuous run may repeat itself and still differ from itself in the last bits: its update
    # k+1 then differs from any resume's in every digest, and only the interrupted process's inputs tell a part.
    exact = determinism.deterministic is not False
    if s.atol > 0:  # bit for bit, the judgement above says it already
        exact = recorded.determinism(continuous, records[REPEAT], 0.0)[0].deterministic is not False
    for k in s.points:
        interrupted, resumed = point_names(k, k == s.primary)
        step = stopped(records[interrupted])
        reference = continuous if determinism.deterministic and exact else None
        restored = recorded.restore(records[interrupted], records[resumed], step, resumed, reference)
        checks += [restored] if restored is not None else []
        if determinism.deterministic:  # else not comparable: a run that differs from itself loses nothing
            resumes[resumed], check = recorded.resume(continuous, records[resumed], step, resumed, s.atol)
            said = restored is not None and restored.diagnosis is not None  # the restore's check names it once
            checks.append(replace(check, diagnosis=None) if said or not exact else check)
    if not determinism.deterministic:
        return Evaluated(checks=checks, resumes=resumes, negative=None, faults={}, determinism=determinism)
    interrupted, resumed = point_names(s.primary, True)
    full, held = records[resumed], records[interrupted]
    step = stopped(held)
    control, check = recorded.negative(continuous, records[RESUMED_NO_RNG], full, step, s.atol)
    negative, check = _inputs_only(exact, held, records[RESUMED_NO_RNG], step, control, check)
    checks.append(check)
    faults: dict[str, Fault] = {}
    for part in s.faults:
        faulty = records[f"{FAULT_PREFIX}{part}"]
        fault, check = recorded.fault(continuous, faulty, full, step, part, s.atol)
        faults[part], check = _inputs_only(exact, held, faulty, step, fault, check)
        checks.append(check)
    return Evaluated(checks=checks, resumes=resumes, negative=negative, faults=faults, determinism=determinism)


def _inputs_only(
    exact: bool, stopped: Observed, run: Observed, k: int, entry: Entry, check: Check
) -> tuple[Entry, Check]:
    """A run that must diverge, diagnosed from the interrupted process's inputs where the continuous run is not
    exactly itself (within --atol): its update k+1 would blame every part on the last bits."""
    if exact or check.not_applicable is not None:  # a run that blocked nothing is diagnosed by nothing
        return entry, check
    at = recorded.restore(stopped, run, k, check.id.trajectory or "")
    why = at.diagnosis if at is not None and not at.passed else None
    return replace(entry, diagnosis=why), replace(check, diagnosis=why)


def _within_spread(s: Settings, records: Records, determinism: Determinism, check: Check) -> Evaluated:
    """A script that differs from itself: each resume by its restore and its trajectory within the measured spread,
    the negative control and the faults at their restore (verify/judge/recorded_tiers.py)."""
    band = recorded_tiers.measured({name: records[name] for name in (CONTINUOUS, *REPEATS)})
    name = "the script differs from itself: each resume is judged by its restore and its measured spread"
    checks: list[Check] = [replace(check, name=name, passed=True)]
    resumes: dict[str, Resume] = {}
    for k in s.points:
        interrupted, resumed = point_names(k, k == s.primary)
        step = stopped(records[interrupted])
        restored = recorded.restore(records[interrupted], records[resumed], step, resumed)
        checks += [restored] if restored is not None else []
        resumes[resumed], check = recorded_tiers.resume(
            band, records[CONTINUOUS], records[resumed], step, resumed, restored
        )
        checks.append(check)
    interrupted = point_names(s.primary, True)[0]
    step, held = stopped(records[interrupted]), records[interrupted]
    negative, check = recorded_tiers.negative(held, records[RESUMED_NO_RNG], step)
    checks.append(check)
    faults: dict[str, Fault] = {}
    for part in s.faults:
        faults[part], check = recorded_tiers.fault(held, records[f"{FAULT_PREFIX}{part}"], step, part)
        checks.append(check)
    spread = replace(determinism, spread=band)
    return Evaluated(checks=checks, resumes=resumes, negative=negative, faults=faults, determinism=spread)


def stopped(seen: Observed) -> int:
    """The last update an interrupted run completed, from its first rank's record (the launcher's, if any)."""
    return script_plan.stopped_at(script_plan.first_rank(seen))
