"""The band a trainer that is not deterministic is held within (verify/judge/spread.py): measured from reference runs,
enveloped over the updates, FACTOR wide, exact wherever the reference runs agree in anything but floats."""

import math

import pytest

from resumeproof.verify.judge import spread
from resumeproof.verify.judge.spread import Run, distance, measure, resolution
from resumeproof.verify.vocabulary.band import FACTOR, Band


def run(losses: list[float], rows: list[int] | None = None, end: dict | None = None) -> Run:
    records = {n: {"loss": loss, "rows": [rows[n - 1] if rows else n]} for n, loss in enumerate(losses, start=1)}
    return Run(records, end)


REFERENCES = {
    "continuous": run([1.0, 0.5, 0.25, 0.125], end={"state": {"w": [1.0, 2.0]}, "step": 4}),
    "continuous-repeat": run([1.0, 0.5, 0.2501, 0.1252], end={"state": {"w": [1.001, 2.0]}, "step": 4}),
    "continuous-repeat-2": run([1.0, 0.5, 0.2502, 0.1251], end={"state": {"w": [1.0, 2.002]}, "step": 4}),
}


def test_the_envelope_is_the_largest_distance_between_two_runs_up_to_each_update():
    band = measure(REFERENCES)
    envelope = [band.updates[n]["loss"] for n in range(1, 5)]
    assert envelope == pytest.approx([0.0, 0.0, 2e-4, 2e-4])  # update 4's spread (1e-4... 2e-4) never narrows it
    assert band.updates[3]["rows"] == 0.0 and band.end["state.w"] == pytest.approx(0.002) and band.end["step"] == 0


def test_a_run_inside_the_band_passes_one_outside_it_is_placed_where_it_leaves():
    band = measure(REFERENCES)
    inside = run([1.0, 0.5, 0.2510, 0.1260], end={"state": {"w": [1.01, 2.0]}, "step": 4})
    assert spread.outside(band, REFERENCES["continuous"], inside) is None
    outside = run([1.0, 0.5, 0.25, 0.125 + FACTOR * 2e-4 * 1.5], end=None)
    found = spread.outside(band, REFERENCES["continuous"], outside)
    assert found is not None and (found.path, found.step) == ("history[3].loss", 4)
    assert found.distance == pytest.approx(3e-3) and found.band == pytest.approx(2e-3)


def test_where_the_reference_runs_agree_exactly_the_run_must_equal_them():
    band = measure(REFERENCES)
    early = run([1.0, 0.5 + 1e-12, 0.25, 0.125])  # updates 1 and 2 never differed between two runs
    assert spread.outside(band, REFERENCES["continuous"], early).path == "history[1].loss"
    rounding = run([1.0, 0.5 + 4 * 2.0**-53, 0.25, 0.125])  # but by rounding: ten units in the last place is room
    assert spread.outside(band, REFERENCES["continuous"], rounding) is None
    rows = run([1.0, 0.5, 0.25, 0.125], rows=[1, 2, 4, 3])  # a batch the runs all agree on is a data position
    found = spread.outside(band, REFERENCES["continuous"], rows)
    assert (found.path, found.distance) == ("history[2].rows", None)
    assert "where every reference run agrees" in found.said()


def test_a_field_the_reference_runs_disagree_on_in_kind_is_not_held():
    references = {name: run([1.0, 0.5], rows=[1, i]) for i, name in enumerate(("a", "b", "c"), start=2)}
    band = measure(references)
    assert band.updates[2]["rows"] is None  # varies: each run took another batch there
    assert spread.outside(band, references["a"], run([1.0, 0.5], rows=[1, 9])) is None


def test_the_end_state_is_held_key_by_key_against_the_spread_of_the_runs_that_ended():
    band = measure(REFERENCES)
    far = run([1.0, 0.5, 0.25, 0.125], end={"state": {"w": [1.0, 2.5]}, "step": 4})
    found = spread.outside(band, REFERENCES["continuous"], far)
    assert found.path == "state.w" and found.distance == pytest.approx(0.5)
    counted = run([1.0, 0.5, 0.25, 0.125], end={"state": {"w": [1.0, 2.0]}, "step": 3})
    assert spread.outside(band, REFERENCES["continuous"], counted).path == "step"


def test_the_room_rounding_leaves_is_read_off_the_bits_the_values_are_written_in():
    float32_ulp = 2.0**-27  # at 0.0625: a float32 average that three runs round alike and a fourth one place away
    assert resolution(0.0625, 0.0625 + float32_ulp) == float32_ulp
    assert resolution(0.1, 0.1 + 2**-56) == math.ulp(0.1)  # float64 values: float64's spacing
    assert resolution({"a": [0.5, 0.25]}, {"a": [0.5, 0.25 + 2**-22]}) == 2.0**-25  # equal leaves need no room
    assert resolution(1.0, 1.5) == 2.0**-7  # both bfloat16, the coarsest type that holds both: its spacing at 1.5


def test_distance_is_the_largest_float_difference_and_none_for_anything_else():
    assert distance({"a": [1.0, 2.0]}, {"a": [1.5, 2.0]}) == 0.5
    assert distance([1, 2], [1, 3]) is None and distance("x", "y") is None and distance([1.0], [1.0, 2.0]) is None
    assert distance(math.nan, math.nan) is None  # NaN never equals: never inside a band


def test_the_band_reads_back_from_its_json():
    band = measure(REFERENCES)
    again = Band.from_json(band.to_json())
    assert again == band and band.to_json()["factor"] == FACTOR
