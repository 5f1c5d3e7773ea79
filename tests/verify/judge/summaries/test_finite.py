"""A number that is not finite in the model's or the optimizer's state, the history, next or eval is not a usable
output; an infinity in another part's bookkeeping (ReduceLROnPlateau's best, mode_worse) is."""

import math

import pytest

from resumeproof.common.protocol import CONTINUOUS, STANDARD_PARTS, CheckKind
from resumeproof.verify.judge.summaries import finite
from resumeproof.verify.run.summary import Summary

OWN = ("net", "opt", "ema", "scaler", "order", "rng-shuffle")  # a trainer's own names for its parts


def summary(state: dict) -> Summary:
    history = [{"step": 1, "rows": [0], "lr": 0.1, "loss": 0.5}]
    return Summary(step=1, history=history, state=state, next={"lr": 0.1}, eval={"mse": 0.25}, meta={})


@pytest.mark.parametrize(
    ("key", "parts", "where"),
    [
        ("model", STANDARD_PARTS, "the model's state"),
        ("params", STANDARD_PARTS, "the model's state"),
        ("weights", STANDARD_PARTS, "the model's state"),
        ("optimizer", STANDARD_PARTS, "the optimizer's state"),
        ("opt", STANDARD_PARTS, "the optimizer's state"),
        ("net", OWN, "the model's state"),
        ("opt", OWN, "the optimizer's state"),
    ],
)
def test_an_infinity_under_a_key_that_names_the_model_or_the_optimizer_is_not_usable(key, parts, where):
    found = finite.unusable(summary({key: {"w": [0.5, math.inf]}, "sched": {"best": 0.1}}), parts)
    assert found == [finite.Unusable(where, f"state.{key}.w[1]", math.inf)]


@pytest.mark.parametrize(
    ("key", "parts"),
    [("scheduler", STANDARD_PARTS), ("sched", STANDARD_PARTS), ("data", STANDARD_PARTS), ("ema", OWN), ("s", OWN)],
)
def test_an_infinity_in_another_parts_bookkeeping_is_no_unusable_output(key, parts):
    assert finite.unusable(summary({key: {"mode_worse": math.inf, "best": -math.inf}}), parts) == []


def test_the_history_next_and_eval_must_be_finite_nan_included_ints_and_bools_always_are():
    s = summary({"model": [1, True, 0.5]})
    s.history[0]["loss"], s.next["lr"], s.eval["mse"] = math.nan, math.inf, -math.inf
    found = finite.unusable(s, STANDARD_PARTS)
    assert [(u.where, u.path) for u in found] == [
        ("the history", "history[0].loss"),
        ("next", "next.lr"),
        ("eval", "eval.mse"),
    ]


def test_the_check_fails_with_the_first_path_and_names_every_place_up_to_three_blaming_no_part():
    s = summary({"model": [math.inf] * 4, "optimizer": {"exp_avg": [math.nan]}})
    check = finite.check(finite.unusable(s, STANDARD_PARTS))
    assert (check.id.kind, check.id.trajectory, check.passed) == (CheckKind.FINITE, CONTINUOUS, False)
    assert check.first_mismatch == "state.model[0]" and check.diagnosis is None
    assert check.detail == (
        "5 non-finite values in the model's state at state.model[0] (inf), in the model's state at state.model[1] "
        "(inf), in the model's state at state.model[2] (inf) and 2 more: not a usable output, however exactly it "
        "resumes"
    )


def test_a_finite_output_passes():
    check = finite.check(finite.unusable(summary({"model": [0.5], "sched": {"best": math.inf}}), STANDARD_PARTS))
    assert check.passed and check.first_mismatch is None and check.detail is None
