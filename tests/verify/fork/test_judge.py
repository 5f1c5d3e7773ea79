"""A fork's judgement on records made by hand: a history that does not continue, a control that does not reproduce
the original run or itself, a branch that does not start from the control's state, where a branch parts."""

import copy
from pathlib import Path

from resumeproof.common import observation as o
from resumeproof.common.protocol import CheckKind
from resumeproof.verify.fork import judge as fork_judge
from resumeproof.verify.fork.original import Original
from resumeproof.verify.run.summary import Summary
from tests.verify.judge.records.test_first_update import PARTS, observed, update

K, N = 3, 2  # the fork point, and the updates of each branch


def summary(losses: list[float], lr: float = 0.1, w: float = 1.0) -> Summary:
    history = [{"step": i + 1, "rows": [i], "lr": lr, "loss": loss} for i, loss in enumerate(losses)]
    return Summary(step=len(history), history=history, state={"w": [w]}, next={"lr": lr}, eval={}, meta={})


BEFORE = [3.0, 2.0, 1.0]
CONTROL = summary([*BEFORE, 0.9, 0.8])


def original(losses: list[float] | None = None, step: int | None = K, whole: Summary | None = None) -> Original:
    records = {r["step"]: r for r in summary(BEFORE if losses is None else losses).history}
    return Original(run=Path("run"), step=step, records=records, summary=whole, sources=("summary.json",))


def test_a_branch_that_carries_the_original_history_on_continues_it():
    check = fork_judge.continues("low", summary([*BEFORE, 0.7, 0.6]), CONTROL, original(), K, N)
    assert check.passed and check.id.kind is CheckKind.CONTINUES and check.id.trajectory == "low"


def test_a_history_started_over_does_not_continue_the_original_run():
    reset = summary([0.9, 0.8])  # a trainer that drops the checkpoint's history: step N, not k+N
    check = fork_judge.continues("low", reset, CONTROL, original(), K, N)
    assert not check.passed and "reports step 2, not 3 + 2" in (check.detail or "")


def test_a_history_the_original_files_do_not_hold_is_named_at_its_first_difference():
    other = fork_judge.continues("control", CONTROL, CONTROL, original([3.0, 2.5, 1.0]), K, N)
    assert not other.passed and "differs from the original run's at history[1].loss: 2.5 vs 2.0" in (other.detail or "")
    apart = fork_judge.continues("low", summary([3.0, 2.0, 1.5, 0.7, 0.6]), CONTROL, original([]), K, N)
    assert not apart.passed and "differs from the control's at history[2].loss" in (apart.detail or "")


def test_without_records_after_the_fork_point_there_is_no_continuation_to_hold():
    assert fork_judge.continuation(CONTROL, original(), K, N) is None


def test_the_control_must_reproduce_the_original_continuation_bit_for_bit():
    held = fork_judge.continuation(CONTROL, original([*BEFORE, 0.9]), K, N)
    assert held is not None and held.passed and "1 updates after step 3" in held.name
    off = fork_judge.continuation(CONTROL, original([*BEFORE, 0.9 + 1e-15]), K, N)
    assert off is not None and not off.passed and "does not reproduce the original run's continuation" in off.detail
    assert "history[3].loss" in (off.detail or "")


def test_a_control_that_started_its_history_over_does_not_reproduce_the_continuation():
    reset = summary([0.9, 0.8])  # steps 1 and 2 only: nothing where the original run's steps 4 and 5 are
    check = fork_judge.continuation(reset, original([*BEFORE, 0.9, 0.8]), K, N)
    assert check is not None and not check.passed and "history[3]: type object != null" in (check.detail or "")


def test_an_original_summary_at_the_controls_step_is_held_whole_state_included():
    whole = summary([*BEFORE, 0.9, 0.8], w=2.0)  # the same history, other weights
    check = fork_judge.continuation(CONTROL, original([*BEFORE, 0.9, 0.8], whole=whole), K, N)
    assert check is not None and not check.passed and "state.w[0]" in (check.detail or "")
    assert "its summary at step 5" in check.name


def test_a_repeat_that_differs_says_the_trainer_is_not_deterministic():
    seen = observed({1: update()})
    same = fork_judge.determinism(CONTROL, copy.deepcopy(CONTROL), seen, observed({1: update()}), K, PARTS)
    assert same.passed and same.id.kind is CheckKind.DETERMINISM
    drifted = fork_judge.determinism(CONTROL, summary([*BEFORE, 0.9, 0.81]), seen, seen, K, PARTS)
    assert not drifted.passed and "not deterministic" in (drifted.detail or "") and "history[4].loss" in drifted.detail
    inside = fork_judge.determinism(CONTROL, CONTROL, seen, observed({1: update(after__grads="other")}), K, PARTS)
    assert not inside.passed and "its first update" in (inside.detail or "")


def test_a_branch_whose_first_update_starts_from_the_controls_inputs_passes_whatever_it_then_computes():
    control = observed({1: update()})
    lr = observed({1: update(step__groups=[{"lr": 0.5}], after__params={"w": "w9"})})  # the configuration at work
    check = fork_judge.inputs("low", control, lr, K, PARTS, True)
    assert check.passed and check.id.kind is CheckKind.INPUTS


def test_a_branch_that_restored_no_weights_is_not_fair_and_the_model_is_named():
    fresh = observed({1: update(forward__model={"w": "initial", "bn.mean": "m"})})
    check = fork_judge.inputs("low", observed({1: update()}), fresh, K, PARTS, True)
    assert not check.passed and check.diagnosis is not None and check.diagnosis.lost == ("model",)
    assert "does not start from the control's state" in (check.detail or "") and check.diagnosis.step == K + 1


def test_a_branch_whose_optimizer_moments_differ_is_not_fair_even_where_its_loss_differs_first():
    moments = observed({1: update(loss__digest="other", step__optimizer="other")})
    check = fork_judge.inputs("low", observed({1: update()}), moments, K, PARTS, True)
    assert not check.passed and check.diagnosis is not None and check.diagnosis.lost == ("optimizer",)


def test_a_generator_set_otherwise_than_the_control_restored_it_is_named_against_the_control():
    restores = [{"group": "kit", "generator": "numpy", "digest": "n0", "before": 1}]
    control = observed({1: update()}, restores)
    seeded = [*restores, {**restores[0], "digest": "seeded"}]  # restored, then seeded again by the override
    reseeded = observed({1: update(forward__generators=("kit", "numpy", "seeded"))}, seeded)
    check = fork_judge.inputs("low", control, reseeded, K, PARTS, True)
    assert not check.passed and "another state than the control's" in (check.detail or "")
    assert "continuous" not in (check.detail or "")


def test_inputs_without_records_are_not_proven():
    check = fork_judge.inputs("low", observed({1: update()}), {}, K, PARTS, True)
    assert not check.passed and "not proven: no observer records of low" in (check.detail or "")
    failed = {None: o.Observation(rank=None, updates={}, failed="hook raised")}
    said = fork_judge.inputs("low", observed({1: update()}), failed, K, PARTS, True).detail or ""
    assert "no observer record of low's first update (hook raised)" in said


def test_the_controls_restores_are_the_state_the_update_before_the_fork_ended_with():
    restores = [{"group": "global", "generator": "torch", "digest": "t0", "before": 1}]
    control = fork_judge.shifted(observed({1: update(), 2: update()}, restores), K)[None]
    assert sorted(control.updates) == [K, K + 1, K + 2]
    assert control.at(K) == o.Recorded.of({o.AFTER: {o.GENERATORS: {"global": {"torch": "t0"}}}})


def test_a_branch_parts_at_its_first_record_that_differs_and_one_that_never_does_is_identical():
    assert fork_judge.parting(CONTROL, summary([*BEFORE, 0.9, 0.7]), K) == (
        5,
        "history[4].loss: 0.8 vs 0.7: |diff| 0.1 > atol 0",
    )
    assert fork_judge.parting(CONTROL, copy.deepcopy(CONTROL), K) == (None, None)
    state_only = fork_judge.parting(CONTROL, summary([*BEFORE, 0.9, 0.8], w=3.0), K)
    assert state_only[0] is None and state_only[1] is not None and state_only[1].startswith("state.w[0]")


def test_the_fork_point_is_the_original_files_else_what_the_control_reports():
    assert fork_judge.fork_step(original(step=3), CONTROL, N) == 3
    assert fork_judge.fork_step(original(step=None), CONTROL, N) == 3
    assert [p.loss for p in fork_judge.curve(CONTROL, K)] == [0.9, 0.8]
