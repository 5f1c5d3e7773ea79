"""An unmodified script judged from the observer's records alone (judge/records/script.py), on records built by hand:
the same `Evaluated` a protocol trainer's summaries give, determinism first, and a script that differs from itself
compared at its restores only."""

from dataclasses import replace

from resumeproof.common.protocol import CONTINUOUS, FAULT_PREFIX, REPEAT, RESUMED_NO_RNG, CheckKind
from resumeproof.verify.judge.records import script
from resumeproof.verify.plan import script as script_plan
from tests.verify.judge.records.test_exact import CONTINUOUS as RECORDED
from tests.verify.judge.records.test_exact import seen, update
from tests.verify.test_settings import SCRIPT_FIELDS, VERIFY, settings_of

ASKED = settings_of({**VERIFY, **SCRIPT_FIELDS, "steps": 6, "points": (3,), "faults": ("optimizer",), "atol": 0.0})
# What the plan runs and expects of each run: the judge holds each resume to its expectation
[INTERRUPTED] = script_plan.interrupted(ASKED)
PLANNED = [*script_plan.build(ASKED), *script_plan.resumes(ASKED, INTERRUPTED, 3)]


def records(repeat: dict) -> dict:
    """A script stopped after update 3, resumed exactly; its negative control reseeds torch, and the fault blocked the
    optimizer's load_state_dict and changed nothing (the script restores the optimizer some other way)."""
    exact = {n - 3: update(loss=f"l{n}", params=f"p{n}", torch_state=f"t{n}") for n in range(4, 7)}
    resumed = seen(exact)
    reseeded = {n - 3: update(loss="x", params="x", torch_state="reseeded") for n in range(4, 7)}
    stopped = {3: update(loss="l3", params="p3", torch_state="t3"), 4: update(loss="l4", params="p4", torch_state="t4")}
    return {
        CONTINUOUS: RECORDED,
        REPEAT: repeat,
        INTERRUPTED.name: seen(stopped, completed=3),
        "resumed": resumed,
        RESUMED_NO_RNG: seen(reseeded, blocked=("torch.set_rng_state",)),
        f"{FAULT_PREFIX}optimizer": seen(exact, blocked=("torch.optim.Optimizer.load_state_dict",)),
    }


def test_a_script_that_repeats_itself_is_judged_bit_for_bit_determinism_first():
    found = script.evaluate(ASKED, PLANNED, records(RECORDED))
    kinds = [c.id.kind for c in found.checks]
    assert kinds == [
        CheckKind.DETERMINISM,
        CheckKind.RESTORE,
        CheckKind.RESUME,
        CheckKind.NEGATIVE_CONTROL,
        CheckKind.FAULT,
    ]
    assert found.determinism.deterministic and all(c.passed for c in found.checks[:4])
    assert found.resumes["resumed"].verdict == "concordant"
    assert found.negative is not None and found.negative.verdict == "divergent"
    assert not found.faults["optimizer"].detected and not found.checks[-1].passed  # a fault it cannot see fails


def test_a_fault_that_blocked_nothing_is_not_applicable_and_diagnosed_by_nothing():
    given = {**records(RECORDED), f"{FAULT_PREFIX}optimizer": records(RECORDED)["resumed"]}
    found = script.evaluate(ASKED, PLANNED, given)
    fault, check = found.faults["optimizer"], found.checks[-1]
    assert check.passed and fault.not_applicable == check.not_applicable
    assert "never called torch.optim.Optimizer.load_state_dict" in (check.not_applicable or "")
    assert fault.diagnosis is None and check.diagnosis is None


def test_a_script_that_differs_from_itself_compares_no_resume_and_claims_no_control():
    other = seen({n: update(loss=f"other{n}", params=f"p{n}", torch_state=f"t{n}") for n in range(1, 7)})
    found = script.evaluate(ASKED, PLANNED, records(other))
    assert found.determinism.deterministic is False and not found.checks[0].passed
    assert [c.id.kind for c in found.checks[1:]] == [CheckKind.RESTORE] and found.checks[1].passed
    assert (found.resumes, found.negative, found.faults) == ({}, None, {})


def test_each_run_is_judged_by_what_the_plan_expects_of_it_not_by_its_name():
    """The judge dispatches on the plan's expectations: a fault planned under another name is still the fault of
    its part, held against the full resume from its own interrupted run."""
    renamed = {"fault-optimizer": "without-the-optimizer"}
    planned = []
    for t in PLANNED:
        if t.name in renamed:
            e = t.expectation
            assert e is not None
            t = replace(t, name=renamed[t.name], planned=replace(e, id=replace(e.id, trajectory=renamed[t.name])))
        planned.append(t)
    given = {renamed.get(name, name): run for name, run in records(RECORDED).items()}
    found = script.evaluate(ASKED, planned, given)
    assert [c.id.kind for c in found.checks] == [
        CheckKind.DETERMINISM,
        CheckKind.RESTORE,
        CheckKind.RESUME,
        CheckKind.NEGATIVE_CONTROL,
        CheckKind.FAULT,
    ]
    assert not found.faults["optimizer"].detected  # as under its own name: the fault blocked nothing it could see
