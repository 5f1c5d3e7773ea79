"""Tree comparison as docs/protocol.md section 4 defines it."""

import math

import pytest

from resumeproof.common.protocol import COMPARED_KEYS
from resumeproof.verify.judge.compare import MAX_REPORTED, check_of, compare, compare_keys, merge

ATOL = 1e-12


def test_identical_trees_are_concordant_with_zero_deviation():
    tree = {"a": [1, 2.5, {"b": "x", "c": None, "d": True}], "e": -0.0}
    result = compare(tree, tree, ATOL)
    assert result.concordant
    assert result.max_abs_diff == 0.0
    assert result.first_path is None


def test_difference_within_atol_matches_and_is_measured():
    result = compare({"w": 1.0}, {"w": 1.0 + 5e-13}, ATOL)
    assert result.concordant
    assert 4e-13 < result.max_abs_diff < 6e-13


def test_difference_just_above_atol_is_a_mismatch_with_no_relative_tolerance():
    # 1e6 * (1 + 1e-15) differs by ~1e-9: any rtol would accept it, atol 1e-12 must not.
    result = compare([1e6], [1e6 * (1 + 1e-15)], ATOL)
    assert not result.concordant
    assert result.first_path == "[0]"


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_number_is_a_failure_even_when_equal_on_both_sides(bad):
    result = compare({"loss": bad}, {"loss": bad}, ATOL)
    assert not result.concordant
    assert result.mismatches[0].path == "loss"
    assert "non-finite" in result.mismatches[0].reason


def test_int_where_the_other_has_a_float_is_a_structural_difference():
    result = compare({"step": 1}, {"step": 1.0}, ATOL)
    assert not result.concordant
    assert "type int != float" in result.mismatches[0].reason


def test_bool_is_not_an_int():
    assert not compare([True], [1], ATOL).concordant


@pytest.mark.parametrize(
    ("a", "b", "path", "reason"),
    [
        ({"x": 1, "y": 2}, {"x": 1}, "", "keys differ"),
        ({"h": [1, 2, 3]}, {"h": [1, 2]}, "h", "length 3 != 2"),
        ({"s": "adam"}, {"s": "sgd"}, "s", "'adam' != 'sgd'"),
        ({"n": None}, {"n": 0}, "n", "type null != int"),
        ({"o": {}}, {"o": []}, "o", "type object != array"),
    ],
)
def test_structure_and_value_differences_are_named_by_path(a, b, path, reason):
    result = compare(a, b, ATOL)
    assert not result.concordant
    assert result.mismatches[0].path == path
    assert reason in result.mismatches[0].reason


def test_paths_name_object_keys_with_dots_and_array_items_with_brackets():
    a = {"state": {"params": {"0.weight": [[0.0, 0.0], [0.0, 0.0]]}}}
    b = {"state": {"params": {"0.weight": [[0.0, 0.0], [0.0, 1.0]]}}}
    assert compare(a, b, ATOL).first_path == "state.params.0.weight[1][1]"


def test_huge_ints_are_compared_exactly():
    big = 2**127 + 5
    assert not compare(big, big + 1, ATOL).concordant
    assert compare(big, big, ATOL).concordant


def test_all_mismatches_are_counted_but_only_the_first_few_kept():
    result = compare([float(x) for x in range(100)], [x + 0.5 for x in range(100)], ATOL)
    assert result.count == 100
    assert len(result.mismatches) == MAX_REPORTED
    assert result.max_abs_diff == 0.5


def test_int_differences_are_mismatches_but_not_deviations():
    result = compare({"permutation": [3, 1, 2], "w": [0.25]}, {"permutation": [1, 3, 2], "w": [0.5]}, ATOL)
    assert [m.path for m in result.mismatches] == ["permutation[0]", "permutation[1]", "w[0]"]
    assert result.max_abs_diff == 0.25


def test_compare_keys_roots_paths_at_each_summary_key():
    a = {"step": 2, "history": [{"rows": [1, 2]}], "meta": {"t": 1.0}}
    b = {"step": 2, "history": [{"rows": [1, 3]}], "meta": {"t": 9.0}}
    parts = compare_keys(a, b, ("step", "history"), ATOL)
    assert list(parts) == ["step", "history"]  # meta is not compared
    assert parts["step"].concordant
    assert parts["history"].first_path == "history[0].rows[1]"


def test_merge_keeps_every_mismatch_in_order_and_the_largest_deviation():
    a = {"x": [0.0] * 15, "y": [0.0] * 15}
    b = {"x": [0.5] * 15, "y": [2.0] * 15}
    merged = merge(compare_keys(a, b, ("x", "y"), ATOL).values())
    assert merged.count == 30
    assert [m.path for m in merged.mismatches][:2] == ["x[0]", "x[1]"]
    assert len(merged.mismatches) == MAX_REPORTED
    assert merged.max_abs_diff == 2.0


def test_an_integer_mismatch_is_worded_as_integers_not_as_a_tolerance():
    result = compare({"cursor": 27}, {"cursor": 26}, 1e-12)
    assert [m.reason for m in result.mismatches] == ["27 vs 26: integers differ (by -1)"]
    assert compare({"cursor": 27}, {"cursor": 27}, 1e-12).concordant


def summary_with(state: dict, loss: float = 0.5) -> dict:
    record = {"step": 1, "rows": [0], "lr": 0.1, "loss": loss}
    return {"step": 1, "history": [record], "state": state, "next": {"lr": 0.1}, "eval": {}}


def test_the_same_infinity_inside_state_matches_and_is_flagged_with_its_path():
    plateau = {"scheduler": {"mode_worse": math.inf, "best": 0.25}}  # a stock ReduceLROnPlateau
    result = merge(compare_keys(summary_with(plateau), summary_with(plateau), COMPARED_KEYS, ATOL).values())
    assert result.concordant and result.nonfinite == ["state.scheduler.mode_worse"]


@pytest.mark.parametrize(
    ("a", "b"), [(math.nan, math.nan), (math.inf, -math.inf), (math.inf, 1.0)], ids=["nan", "opposite", "finite"]
)
def test_nan_never_matches_and_different_infinities_do_not_match_even_inside_state(a, b):
    result = compare_keys(summary_with({"x": a}), summary_with({"x": b}), COMPARED_KEYS, ATOL)["state"]
    assert not result.concordant and result.nonfinite == []


def test_a_non_finite_loss_still_fails_even_when_both_runs_have_it():
    result = merge(compare_keys(summary_with({}, math.inf), summary_with({}, math.inf), COMPARED_KEYS, ATOL).values())
    assert not result.concordant and result.first_path == "history[0].loss"


@pytest.mark.parametrize(
    ("path", "check"),
    [
        ("history[5].loss", "history.loss"),
        ("history[5].rows[0]", "history.rows"),
        ("history[2].override", "history.override"),
        ("history", "history"),
        ("history[3]", "history"),
        ("state.params.0.weight[1][1]", "state"),
        ("next.rng.python", "next"),
        ("step", "step"),
    ],
)
def test_each_mismatch_path_belongs_to_one_check(path, check):
    assert check_of(path) == check
