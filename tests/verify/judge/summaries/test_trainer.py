"""Every trajectory held against the continuous run by the function of its expectation: a history prefix, a
resume that must be concordant, the negative control, a fault; determinism before any blame."""

import copy
import math
from pathlib import Path

from resumeproof.common.protocol import CONTINUOUS, INTERRUPTED, RESUMED, RESUMED_NO_RNG, STANDARD_PARTS, CheckKind
from resumeproof.verify.judge.summaries.evidence import Evidence
from resumeproof.verify.judge.summaries.trainer import NO_RANDOM_STATE
from resumeproof.verify.judge.summaries.trainer import evaluate as evaluate_read
from resumeproof.verify.plan import trainer as trainer_plan
from resumeproof.verify.run.summary import Summary
from resumeproof.verify.settings import Given, Settings
from resumeproof.verify.vocabulary.findings import CONCORDANT, DIVERGENT

SETTINGS = Settings(
    output=Path("/r"),
    steps=6,
    interrupt_at=Given((3,)),
    atol=1e-12,
    train_cmd="t",
    jobs=1,
    timeout=60.0,
    faults=("model",),
)
TRAJECTORIES = trainer_plan.build(SETTINGS)
FAULT = "fault-model"


def continuous() -> dict:
    history = [{"step": s, "rows": [2 * s, 2 * s + 1], "lr": 0.1, "loss": 1.0 / s} for s in range(1, 7)]
    state = {"model": [0.5, -0.25], "data": {"cursor": 12}}
    return {
        "step": 6,
        "history": history,
        "state": state,
        "next": {"lr": 0.1, "rng": {"numpy": 0.3}},
        "eval": {"mse": 0.1},
    }


def changed(edit) -> dict:
    summary = continuous()
    edit(summary)
    return summary


def summaries(**given: dict) -> dict[str, dict]:
    """Every run exact (the negative control diverging in its next draw) unless `given` says otherwise."""
    cont = continuous()
    out = {CONTINUOUS: cont, INTERRUPTED: {**continuous(), "step": 3, "history": continuous()["history"][:3]}}
    out[RESUMED], out[FAULT] = copy.deepcopy(cont), changed(lambda s: s["state"].update(model=[0.6, -0.25]))
    out[RESUMED_NO_RNG] = changed(lambda s: s["next"]["rng"].update(numpy=0.9))
    return {**out, **{name.replace("_", "-"): summary for name, summary in given.items()}}


def evaluate(trajectories, documents: dict[str, dict], atol, parts, found=None):
    """The evaluation of these summary documents (as trainers write them), read as read_summary reads them."""
    return evaluate_read(trajectories, {name: Summary.of(d) for name, d in documents.items()}, atol, parts, found)


def checks_by_trajectory(evaluated):
    return {c.id.trajectory: c for c in evaluated.checks}


def test_a_full_pass_is_one_check_per_expectation_each_held_by_its_own_kind():
    found = evaluate(TRAJECTORIES, summaries(), 1e-12, STANDARD_PARTS)
    kinds = {name: c.id.kind for name, c in checks_by_trajectory(found).items()}
    assert kinds == {
        CONTINUOUS: CheckKind.FINITE,
        INTERRUPTED: CheckKind.PREFIX,
        RESUMED: CheckKind.RESUME,
        RESUMED_NO_RNG: CheckKind.NEGATIVE_CONTROL,
        FAULT: CheckKind.FAULT,
    }
    assert all(c.passed for c in found.checks)
    assert found.resumes[RESUMED].verdict == CONCORDANT and found.negative.verdict == DIVERGENT
    assert found.faults["model"].detected and found.faults["model"].caught_by == ("state",)
    assert found.next_lr == 0.1


def test_a_resume_that_differs_fails_with_the_part_the_evidence_points_to():
    lost_data = changed(lambda s: s["state"]["data"].update(cursor=0))
    found = evaluate(TRAJECTORIES, summaries(resumed=lost_data), 1e-12, STANDARD_PARTS)
    check = checks_by_trajectory(found)[RESUMED]
    assert not check.passed and check.first_mismatch == "state.data.cursor"
    assert found.resumes[RESUMED].verdict == DIVERGENT and found.resumes[RESUMED].diagnosis.lost == ("data",)


def test_a_negative_control_that_equals_the_full_resume_says_no_random_state_is_restored():
    found = evaluate(TRAJECTORIES, summaries(resumed_no_rng=continuous()), 1e-12, STANDARD_PARTS)
    check = checks_by_trajectory(found)[RESUMED_NO_RNG]
    assert not check.passed and check.diagnosis == NO_RANDOM_STATE
    assert found.negative.identical_to_full_resume is True


def test_a_fault_that_changes_nothing_is_not_caught_and_is_marked_identical_to_the_full_resume():
    found = evaluate(TRAJECTORIES, summaries(**{FAULT: continuous()}), 1e-12, STANDARD_PARTS)
    fault = found.faults["model"]
    assert not fault.detected and fault.caught_by == () and fault.identical_to_full_resume
    assert not checks_by_trajectory(found)[FAULT].passed


def test_an_interrupted_history_that_is_not_the_prefix_makes_the_trainer_not_deterministic_and_blames_no_part():
    given = summaries()
    given[INTERRUPTED]["history"][1]["loss"] += 1e-6
    given[RESUMED]["state"]["data"]["cursor"] = 0
    found = evaluate(TRAJECTORIES, given, 1e-12, STANDARD_PARTS)
    checks = checks_by_trajectory(found)
    assert not checks[INTERRUPTED].passed and found.determinism.deterministic is False
    assert checks[RESUMED].diagnosis.rule == "not-deterministic" and checks[None].id.kind is CheckKind.DETERMINISM


def test_a_repeat_that_equals_the_continuous_run_adds_a_passing_determinism_check():
    found = evaluate(TRAJECTORIES, summaries(), 1e-12, STANDARD_PARTS, Evidence(repeat=Summary.of(continuous())))
    assert found.determinism.repeated and found.checks[-1].id.kind is CheckKind.DETERMINISM and found.checks[-1].passed


def with_infinities(s: dict) -> None:
    s["state"]["model"][1] = -math.inf  # a weight, the same in every run
    s["state"]["scheduler"] = {"mode_worse": math.inf}  # a stock ReduceLROnPlateau's bookkeeping


def test_an_infinity_in_the_models_state_fails_as_not_usable_while_bookkeeping_still_matches_and_nothing_is_blamed():
    runs = {name: changed(with_infinities) for name in (CONTINUOUS, RESUMED, FAULT)}
    runs[RESUMED_NO_RNG] = changed(lambda s: (with_infinities(s), s["next"]["rng"].update(numpy=0.9)))
    runs[FAULT]["state"]["model"][0] = 0.6
    found = evaluate(TRAJECTORIES, summaries(**runs), 1e-12, STANDARD_PARTS)
    checks = checks_by_trajectory(found)
    usable = checks[CONTINUOUS]
    assert not usable.passed and usable.first_mismatch == "state.model[1]" and usable.diagnosis is None
    assert usable.detail.startswith("non-finite value in the model's state at state.model[1] (-inf): not a usable")
    assert checks[RESUMED].passed and found.resumes[RESUMED].diagnosis is None  # the resume itself is exact
    assert [c.id.trajectory for c in found.checks if not c.passed] == [CONTINUOUS]
    assert found.nonfinite == ("state.scheduler.mode_worse",)  # matched, flagged, accepted
