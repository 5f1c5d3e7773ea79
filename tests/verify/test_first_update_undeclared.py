"""A part the observer recognised by its class (a GradScaler, an averaged model, a generator, an optimizer, an LR
scheduler) is named in the protocol's words where the trainer declares no part of that kind; a declared part of that
kind keeps its own name, and two of one kind name neither."""

from resumeproof.common import observation as o
from resumeproof.common.protocol import STANDARD_PARTS
from resumeproof.verify.first_update import own_part, restored
from tests.verify.test_first_update import diagnose, observed, update

EMA_STATE = [{"Sequential": "e0"}]


def step(**changes):
    found = update()[o.STEP] | {o.AVERAGED: EMA_STATE}
    return found | changes


def test_a_lost_gradscaler_is_named_scaler_where_the_trainer_declares_the_standard_parts_only():
    first = update(step__scalers=[{"scale": 2.0, "growth_tracker": 0}], loss__scale=2.0)
    d = diagnose(first, parts=STANDARD_PARTS)
    assert d is not None and d.lost == ("scaler",), d


def test_a_lost_ema_is_named_ema_where_no_part_is_declared_of_its_kind():
    then, first = update(), update()
    then[o.STEP], first[o.STEP] = step(), step(**{o.AVERAGED: [{"Sequential": "e9"}]})
    d = diagnose(first, then=then, parts=STANDARD_PARTS)
    assert d is not None and d.lost == ("ema",) and "averaged model" in d.explanation


def test_a_declared_name_of_the_same_kind_wins():
    then, first = update(), update()
    then[o.STEP], first[o.STEP] = step(), step(**{o.AVERAGED: [{"Sequential": "e9"}]})
    d = diagnose(first, then=then, parts=(*STANDARD_PARTS, "teacher"))
    assert d is not None and d.lost == ("teacher",)


def test_two_declared_parts_of_one_kind_name_neither_nor_the_protocols_own():
    assert own_part("ema", ("model", "teacher", "swa")) is None
    assert own_part("scaler", ("model",)) == "scaler"
    assert own_part("rng-cuda", STANDARD_PARTS) == "rng-cuda"


def test_a_concept_the_observer_does_not_recognise_by_its_class_is_not_invented():
    assert own_part("data", ("net", "opt")) is None


def test_the_parts_whose_state_enters_the_first_resumed_update_the_same_are_restored():
    then = update()
    then[o.STEP] = step()
    first = update(loss__digest="other")
    first[o.STEP] = step(**{o.SCALERS: [{"scale": 2.0, "growth_tracker": 0}]})
    continuous, resumed = observed({6: then}), observed({1: first})
    found = restored(continuous, resumed, 5, STANDARD_PARTS)
    assert found == {"model", "optimizer", "scheduler", "ema"}  # the GradScaler's state differs: not restored
    assert restored(continuous, observed({1: first}, rank=0), 5, STANDARD_PARTS) == frozenset()  # other ranks


def test_what_the_observer_could_not_read_is_said_beside_the_diagnosis():
    blind = update(loss__digest="other")
    blind[o.STEP][o.UNSEEN] = ["scaler.growth_tracker"]
    d = diagnose(blind)
    assert d is not None and d.explanation.endswith("; unseen by the observer: scaler.growth_tracker")
    assert "unseen" not in diagnose(update(loss__digest="other")).explanation


def test_another_number_of_backward_passes_names_the_progress_counter_before_the_generators_it_moved():
    first = update(forward__generators=("kit", "numpy", "other"))  # another micro-batch count draws otherwise
    first[o.STEP][o.BACKWARDS], then = 1, update()
    then[o.STEP][o.BACKWARDS] = 3
    d = diagnose(first, then=then, parts=STANDARD_PARTS)
    assert d is not None and d.lost == ("progress",) and "1 backward passes in the update vs 3" in d.explanation
    then[o.STEP][o.BACKWARDS] = 1
    assert diagnose(first, then=then, parts=STANDARD_PARTS).lost == ("rng-numpy",)
