"""What a script's runs under `verify --observe` could show at all: a negative control or a fault that blocked nothing
is not applicable, and a continuous run longer than `--steps` is compared on its first `--steps` updates.

A fault makes one part's `load_state_dict` a no-op, the negative control the generators' setters. Where the script
never calls it (no scheduler object, no GradScaler on the CPU, a generator seeded again instead of restored), the run
blocked nothing: whatever it does is the script's own resume, not the fault's, so it neither catches the fault nor
fails for it, and its check says which call the script never made (docs/checks.md, docs/observe.md).
"""

from collections.abc import Mapping

from resumeproof.common import observation as o
from resumeproof.common.protocol import FAULT_PREFIX, RESUMED_NO_RNG, CheckId, CheckKind
from resumeproof.verify.vocabulary.findings import NOT_APPLICABLE, Check, Fault, Resume

Observed = Mapping[int | None, o.Observation]
# What each fault blocks (observe/block.py), as a user would look for it in the script.
RESTORERS = {
    "model": "torch.nn.Module.load_state_dict",
    "optimizer": "torch.optim.Optimizer.load_state_dict",
    "scheduler": "an LR scheduler's load_state_dict",
    "scaler": "torch.amp.GradScaler.load_state_dict",
}
SETTERS = (  # what the negative control blocks: the process-wide generators' setters, and those of a trainer's own
    "torch.set_rng_state, numpy.random.set_state, random.setstate, torch.Generator.set_state, "
    "a NumPy bit generator's state, RandomState.set_state, random.Random.setstate"
)


def blocked(records: Observed) -> list[str]:
    """What the run's processes called that the observer blocked, every rank's together."""
    return sorted({b for seen in records.values() for b in seen.blocked})


def fault_reason(part: str, records: Observed) -> str | None:
    """Why a fault could not apply ("the script never called X"), or None where it blocked a call."""
    return None if blocked(records) else f"the script never called {RESTORERS.get(part, f'{part} load_state_dict')}"


def control_reason(records: Observed) -> str | None:
    """Why the negative control could not apply, or None where it blocked a setter."""
    return None if blocked(records) else f"the script never called a generator's setter ({SETTERS})"


def fault(part: str, k: int, reason: str) -> tuple[Fault, Check]:
    """A fault that blocked nothing: not caught, not failed, said as not applicable."""
    entry = Fault(
        detected=False,
        cause=f"{part}'s load_state_dict made a no-op",
        caught_by=(),
        first_mismatch=None,
        max_deviation=0.0,
        mismatches=0,
        diagnosis=None,
        identical_to_full_resume=False,  # unknown and beside the point: the run blocked nothing
        not_applicable=reason,
    )
    check = Check(
        id=CheckId(kind=CheckKind.FAULT, trajectory=f"{FAULT_PREFIX}{part}", part=part),
        name=f"resume without {part}: not applicable, {reason}",
        passed=True,
        detail=entry.cause,
        resumed_at=k,
        not_applicable=reason,
    )
    return entry, check


def control(k: int, reason: str) -> tuple[Resume, Check]:
    """A negative control that blocked nothing: whatever its run did, the script's own resume did it."""
    entry = Resume(
        verdict=NOT_APPLICABLE,
        max_state_deviation=None,
        max_deviation=0.0,
        final_mse=None,
        mse_deviation=None,
        mismatches=0,
        first_mismatch=None,
        diagnosis=None,
    )
    check = Check(
        id=CheckId(kind=CheckKind.NEGATIVE_CONTROL, trajectory=RESUMED_NO_RNG),
        name=f"negative control not applicable: {reason}",
        passed=True,
        detail="blocked: nothing",
        resumed_at=k,
        not_applicable=reason,
    )
    return entry, check


def overran(continuous: Observed, steps: int) -> int | None:
    """The updates the continuous run made where it made more than `steps` (nanoGPT's loop runs iterations 0 to
    max_iters inclusive): the observer recorded the first `steps`, and only those are compared."""
    made = max((seen.completed or 0 for seen in continuous.values()), default=0)
    return made if made > steps else None
