"""A fork's result: fair only with every check passed, the trainer's determinism said first among the reasons, who
ended lowest and by how much, and what fork.json holds."""

import json
import math
from pathlib import Path

from resumeproof.common.protocol import CheckId, CheckKind
from resumeproof.verify.fork.result import BranchResult, Fork, Point
from resumeproof.verify.vocabulary.findings import Check


def branch(name: str, *losses: float, parts_at: int | None = 4, overrides: tuple = ("--x",)) -> BranchResult:
    curve = tuple(Point(step=4 + i, loss=loss, lr=0.1) for i, loss in enumerate(losses))
    return BranchResult(name=name, overrides=overrides, curve=curve, parts_at=parts_at)


def check(kind: CheckKind, passed: bool, detail: str) -> Check:
    return Check(id=CheckId(kind=kind, trajectory="b"), name=str(kind), passed=passed, detail=detail)


def fork(*branches: BranchResult, checks: tuple = (), error: str | None = None) -> Fork:
    given = {"checkpoint": Path("c.pt"), "sha256": "0" * 64, "train_cmd": "t", "steps": 2, "fork_step": 3}
    return Fork(error=error, branches=branches, checks=checks, **given)


CONTROL = branch("control", 0.9, 0.8, parts_at=None, overrides=())


def test_a_fork_is_fair_only_with_checks_all_passed_and_no_error():
    passed = (check(CheckKind.INPUTS, True, "same"),)
    assert fork(CONTROL, checks=passed).fair
    assert not fork(CONTROL).fair  # nothing proven
    assert not fork(CONTROL, checks=passed, error="low: exited with status 2").fair
    assert not fork(CONTROL, checks=(*passed, check(CheckKind.CONTINUES, False, "reset"))).fair


def test_the_trainers_determinism_is_the_first_reason():
    checks = (check(CheckKind.INPUTS, False, "low differs"), check(CheckKind.DETERMINISM, False, "not deterministic"))
    assert fork(CONTROL, checks=checks).reasons == ["not deterministic", "low differs"]


def test_the_outcome_names_the_lowest_and_its_margin_to_the_next():
    f = fork(CONTROL, branch("low", 0.9, 0.75), branch("high", 0.9, 0.5))
    assert f.lowest is not None and f.lowest.name == "high"
    assert f.outcome() == "high ended lowest, 0.25 below low (0.5 vs 0.75 at step 5)"
    assert fork(CONTROL, branch("same", 0.9, 0.8)).outcome() == "control and same ended level (loss 0.8)"


def test_a_branch_that_ended_without_a_finite_loss_is_never_the_lowest():
    f = fork(CONTROL, branch("blown", 0.9, math.nan), branch("low", 0.9, 0.85))
    assert f.lowest is not None and f.lowest.name == "control"
    assert (
        f.outcome() == "control ended lowest, 0.05 below low (0.8 vs 0.85 at step 5); blown ended with no finite loss"
    )


def test_a_branch_that_never_parts_from_the_control_is_one_whose_override_changed_nothing():
    same = branch("same", 0.9, 0.8, parts_at=None)
    assert [b.name for b in fork(CONTROL, same, branch("low", 0.9, 0.7)).no_change()] == ["same"]


def test_fork_json_holds_the_verdict_the_curves_and_the_checks(tmp_path):
    f = fork(CONTROL, branch("low", 0.9, 0.7), checks=(check(CheckKind.INPUTS, False, "low differs"),))
    f.write(tmp_path / "fork.json")
    doc = json.loads((tmp_path / "fork.json").read_text())
    assert (doc["format"], doc["fair"], doc["reasons"], doc["lowest"]) == (
        "resumeproof-fork/1",
        False,
        ["low differs"],
        "low",
    )
    assert doc["branches"]["low"]["curve"][1] == {"step": 5, "loss": 0.7, "lr": 0.1}
    assert doc["branches"]["low"]["final_loss"] == 0.7 and doc["checks"][0]["kind"] == "inputs"
