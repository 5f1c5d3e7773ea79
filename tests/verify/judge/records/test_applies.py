"""A negative control or a fault of `verify --observe` that blocked nothing is not applicable
(judge/records/applies.py): whatever its run did, the script's own resume did it, so it neither catches nor fails,
and it says which call the script never made; in both tiers, whether its run diverged or not. A continuous run
longer than --steps is said."""

import pytest

from resumeproof.common import observation as o
from resumeproof.verify.judge.records import applies, exact, tiers
from resumeproof.verify.vocabulary.findings import NOT_APPLICABLE, FaultStatus
from tests.verify.judge.records.test_exact import CONTINUOUS, seen, update

K = 3
FULL = seen({n - K: update(loss=f"l{n}", params=f"p{n}", torch_state=f"t{n}") for n in range(4, 7)})
# A run that differs from update k+1 on (a script that seeds its generator again instead of restoring it).
RESEEDED = seen({n - K: update(loss=f"x{n}", params=f"x{n}", torch_state=f"x{n}") for n in range(4, 7)})
INTERRUPTED = seen({3: update(torch_state="t3"), 4: update(torch_state="t4")}, completed=3)


def blocking(run: dict, *calls: str) -> dict:
    [(rank, record)] = run.items()
    return {rank: o.Observation(rank=rank, updates=record.updates, completed=record.completed, blocked=calls)}


@pytest.mark.parametrize("run", [FULL, RESEEDED], ids=["equal", "diverged"])
def test_a_fault_that_blocked_nothing_is_not_applicable_whether_or_not_its_run_diverged(run):
    for fault, check in (
        exact.fault(CONTINUOUS, run, FULL, K, "scaler"),
        tiers.fault(INTERRUPTED, run, K, "scaler"),
    ):
        assert fault.status is FaultStatus.NOT_APPLICABLE and not fault.detected and fault.diagnosis is None
        assert fault.not_applicable == "the script never called torch.amp.GradScaler.load_state_dict"
        assert check.passed and check.not_applicable == fault.not_applicable and check.diagnosis is None
        assert check.id.part == "scaler" and "not applicable" in check.name


def test_a_fault_that_blocked_a_call_is_judged_caught_or_not_caught():
    caught, check = exact.fault(CONTINUOUS, blocking(RESEEDED, "Module.load_state_dict"), FULL, K, "model")
    assert caught.status is FaultStatus.CAUGHT and check.passed and check.not_applicable is None
    missed, check = exact.fault(CONTINUOUS, blocking(FULL, "LambdaLR.load_state_dict"), FULL, K, "scheduler")
    assert missed.status is FaultStatus.NOT_CAUGHT and not check.passed and missed.not_applicable is None


@pytest.mark.parametrize("run", [FULL, RESEEDED], ids=["equal", "diverged"])
def test_a_negative_control_that_blocked_nothing_is_not_applicable_not_divergent(run):
    """nanoGPT seeds its generator again on resume: its negative control diverges, but not because of the block."""
    for entry, check in (exact.negative(CONTINUOUS, run, FULL, K), tiers.negative(INTERRUPTED, run, K)):
        assert entry.verdict == NOT_APPLICABLE and entry.diagnosis is None and check.diagnosis is None
        assert check.passed and check.not_applicable is not None and "torch.set_rng_state" in check.not_applicable
        assert "torch.Generator.set_state" in check.not_applicable  # a generator object's setter is blocked too
        assert check.name.startswith("negative control not applicable: the script never called")


def test_a_negative_control_that_blocked_a_setter_still_diverges_as_before():
    entry, check = exact.negative(CONTINUOUS, blocking(RESEEDED, "torch.set_rng_state"), FULL, K)
    assert entry.verdict == "divergent" and check.passed and check.not_applicable is None


def test_a_continuous_run_longer_than_its_steps_is_said_once_and_one_of_its_length_is_not():
    assert applies.overran(seen(CONTINUOUS[None].updates, completed=7), 6) == 7
    assert applies.overran(CONTINUOUS, 6) is None
