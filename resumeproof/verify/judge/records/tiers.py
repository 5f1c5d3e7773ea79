"""`verify --observe` of a script that is not deterministic, judged in two tiers (docs/observe.md, docs/checks.md):

- the restore: the resumed run's first update starts from what the interrupted process held for its update k+1
  (exact.restore: generators, batch, model, optimizer state and hyper-parameters, schedulers,
  GradScalers, averaged models), bit for bit whatever the kernels do; the negative control and each fault must
  differ there, and the part that differs is named from the records.
- the trajectory: every update after k within the script's own run-to-run spread (verify/judge/spread.py), measured by
  the continuous run and its repeats: the loss by its value, the hyper-parameters, and the batch wherever every
  reference run took the same one. The optimizer's state and the parameters are digests: runs that differ from
  each other differ there by an amount the records do not hold, so the restore alone holds them.
"""

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from resumeproof.common import observation as o
from resumeproof.common.protocol import FAULT_PREFIX, RESUMED_NO_RNG, CheckId, CheckKind
from resumeproof.verify.judge import spread
from resumeproof.verify.judge.records import applies, exact
from resumeproof.verify.judge.spread import Run, measure, outside_check
from resumeproof.verify.vocabulary.band import Band
from resumeproof.verify.vocabulary.findings import DIVERGENT, WITHIN_SPREAD, Check, Fault, Resume

Observed = Mapping[int | None, o.Observation]
HELD = {"loss": (o.LOSS, o.VALUE), "batch": (o.FORWARD, o.BATCH), "hyper-parameters": (o.STEP, o.GROUPS)}


def measured(references: Mapping[str, Observed]) -> Band:
    """The spread of the continuous run and its repeats, every rank's updates side by side."""
    return measure({name: run_of(records) for name, records in references.items()})


def run_of(records: Observed, offset: int = 0) -> Run:
    """What the band holds of one run's records: per update (counted from `offset` + 1), each rank's loss, batch
    and hyper-parameters."""
    found: dict[int, dict[str, Any]] = {}
    for rank, seen in records.items():
        for n, update in seen.updates.items():
            mine = found.setdefault(n + offset, {})
            for label, (moment, key) in HELD.items():
                mine[label if rank is None else f"{label} (rank {rank})"] = update.held(moment, key)
    return Run(found)


def resume(
    band: Band, continuous: Observed, resumed: Observed, k: int, name: str, restored: Check | None
) -> tuple[Resume, Check]:
    """The trajectory tier of one resume; its diagnosis is the restore's where that differs."""
    outside = spread.outside(band, run_of(continuous), run_of(resumed, k), prefix="update")
    check_id = CheckId(kind=CheckKind.RESUME, trajectory=name)
    check = outside_check(check_id, f"{name} (from update {k}) within the script's measured spread", outside, restored)
    check = replace(check, resumed_at=k)
    entry = Resume(
        verdict=WITHIN_SPREAD if outside is None else DIVERGENT,
        max_state_deviation=None,
        max_deviation=(outside.distance or 0.0) if outside is not None else 0.0,
        final_mse=None,
        mse_deviation=None,
        mismatches=0 if outside is None else 1,
        first_mismatch=outside.path if outside is not None else None,
        diagnosis=check.diagnosis,
    )
    return entry, check


def negative(interrupted: Observed, control: Observed, k: int) -> tuple[Resume, Check]:
    """The resume with the generators' setters blocked must differ at its restore; where it blocked nothing, it is not
    applicable (judge/records/applies.py)."""
    reason = applies.control_reason(control)
    if reason is not None:
        return applies.control(k, reason)
    at = exact.restore(interrupted, control, k, RESUMED_NO_RNG)
    differs = at is not None and not at.passed
    blocked = applies.blocked(control)
    name = "a resume with the generators' setters blocked differs at its restore (negative control)"
    if not differs:
        name = f"negative control without power at its restore: blocked {', '.join(blocked)}"
    why = at.diagnosis if at is not None and differs else None
    check = Check(
        id=CheckId(kind=CheckKind.NEGATIVE_CONTROL, trajectory=RESUMED_NO_RNG),
        name=name,
        passed=differs,
        first_mismatch=at.first_mismatch if at is not None else None,
        detail=f"blocked: {', '.join(blocked)}",
        diagnosis=why,
        resumed_at=k,
    )
    entry = Resume(
        verdict=DIVERGENT if differs else WITHIN_SPREAD,
        max_state_deviation=None,
        max_deviation=0.0,
        final_mse=None,
        mse_deviation=None,
        mismatches=1 if differs else 0,
        first_mismatch=check.first_mismatch,
        diagnosis=why,
    )
    return entry, check


def fault(interrupted: Observed, faulty: Observed, k: int, part: str) -> tuple[Fault, Check]:
    """A resume with one part's load_state_dict blocked must differ at its restore; where it blocked nothing, it is not
    applicable (judge/records/applies.py)."""
    reason = applies.fault_reason(part, faulty)
    if reason is not None:
        return applies.fault(part, k, reason)
    at = exact.restore(interrupted, faulty, k, f"{FAULT_PREFIX}{part}")
    differs = at is not None and not at.passed
    cause = f"{part}'s load_state_dict made a no-op"
    why = at.diagnosis if at is not None and differs else None
    first = at.first_mismatch if at is not None and differs else None
    entry = Fault(
        detected=differs,
        cause=cause,
        caught_by=("restore",) if differs else (),
        first_mismatch=first,
        max_deviation=0.0,
        mismatches=1 if differs else 0,
        diagnosis=why,
        identical_to_full_resume=not differs,
    )
    check = Check(
        id=CheckId(kind=CheckKind.FAULT, trajectory=f"{FAULT_PREFIX}{part}", part=part),
        name=f"resume without {part} differs at its restore",
        passed=differs,
        first_mismatch=first,
        detail=cause,
        diagnosis=why,
        resumed_at=k,
    )
    return entry, check
