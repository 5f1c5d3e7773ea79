"""A protocol trainer's resume by other code (judge/records/versions.py tells it and holds its restore): its restore
from the observer's records, then its summary against the continuous run's, where it moved first."""

from dataclasses import replace

from resumeproof.common.protocol import CONTINUOUS, CheckId, CheckKind
from resumeproof.verify.judge.records.versions import MOVED, changed, marked, restored, unpowered
from resumeproof.verify.judge.summaries.diagnosis import first_record
from resumeproof.verify.judge.summaries.held import Against, Held, compared, resume_entry
from resumeproof.verify.run.trajectories import Trajectory
from resumeproof.verify.vocabulary.expectation import Expectation
from resumeproof.verify.vocabulary.findings import Check, Diagnosis


def held(t: Trajectory, e: Expectation, a: Against) -> Held:
    """A protocol trainer's resume by other code: its restore from the records, then its summary against the
    continuous run's."""
    other = a.summaries[t.name]
    parts_of, result = compared(a, other)
    continuous, resumed = a.found.observed.get(CONTINUOUS) or {}, a.found.observed.get(t.name) or {}
    restore = restored(t.name, continuous, resumed, e.resumed_at, a.parts)
    lost = restore.diagnosis if restore is not None and not restore.passed else None
    why: Diagnosis | None = lost
    if lost is None and not result.concordant:
        step, fields, evidence = first_record(a.continuous.history, other.history, a.atol)
        moved = ", ".join(MOVED.get(field, field) for field in sorted(fields)) if step is not None else None
        said = "; ".join(evidence) or f"{result.first_path}: {result.mismatches[0].reason}"
        why = changed(continuous, resumed, e.resumed_at, a.parts, (step, moved, said))
    entry = resume_entry(a.continuous, other, result, parts_of["state"], why, None)
    check = Check(
        id=CheckId(kind=CheckKind.RESUME, trajectory=t.name),
        name=f"{t.name} (resumed by other code from step {e.resumed_at}) matches continuous",
        passed=result.concordant,
        max_abs_diff=result.max_abs_diff,
        first_mismatch=result.first_path,
        detail=result.mismatches[0].reason if result.mismatches else None,
        diagnosis=None if lost is not None else why,  # a part lost is named once, by the restore's check
        resumed_at=e.resumed_at,
        first_update=result.first_update,
    )
    return Held(check=check, restore=restore, resume=marked(entry), nonfinite=tuple(result.nonfinite))


def must_differ(t: Trajectory, e: Expectation, a: Against, held: Held) -> Held:
    """The negative control or a fault under other code: it must be fed otherwise at its first update (what it
    omits), not merely diverge, which the code's change alone would make it do."""
    continuous, mine = a.found.observed.get(CONTINUOUS) or {}, a.found.observed.get(t.name) or {}
    why = unpowered(continuous, mine, e.resumed_at, a.parts) if held.check.passed else None
    if why is None:
        return held
    check = replace(held.check, passed=False, detail=why.explanation, diagnosis=why)
    fault = (held.fault[0], replace(held.fault[1], detected=False, diagnosis=why)) if held.fault else None
    return replace(held, check=check, fault=fault)
