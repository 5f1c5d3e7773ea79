"""The evidence a failed comparison asks for: determinism before any blame, probes that name a part, a seeded run."""

import copy

from resumeproof.common.protocol import STANDARD_PARTS
from resumeproof.verify.judge.summaries import evidence
from resumeproof.verify.judge.summaries.diagnosis import Context
from resumeproof.verify.run.summary import Summary
from resumeproof.verify.vocabulary.findings import Diagnosis


def summary(noise: float = 0.0) -> Summary:
    history = [{"step": s, "rows": [s], "lr": 0.1, "loss": 1.0 / s + (noise if s >= 4 else 0.0)} for s in range(1, 7)]
    state, draws = {"model": [0.5 + noise]}, {"lr": 0.1, "rng": {"numpy": 0.3}}
    return Summary(step=6, history=history, state=state, next=draws, eval={}, meta={})


UNKNOWN = Diagnosis(lost=(), rule="none", step=4, evidence="history[3].loss", explanation="the loss differs")


def test_a_repeat_that_differs_makes_the_trainer_not_deterministic_from_its_first_differing_update():
    found = evidence.determinism(summary(), summary(noise=1e-9), None, 1e-12)
    assert found.repeated and found.deterministic is False
    assert (found.first_step, found.first_mismatch) == (4, "history[3].loss")


def test_a_repeat_within_atol_is_deterministic():
    found = evidence.determinism(summary(), summary(noise=1e-13), None, 1e-12)
    assert found.repeated and found.deterministic is True


def test_an_interrupted_run_that_differs_before_its_resume_point_is_not_deterministic():
    found = evidence.determinism(summary(), None, ("interrupted", summary(noise=1e-3)), 1e-12)
    assert found.deterministic is False and not found.repeated and found.first_step == 4
    assert "before the resume point" in (found.detail or "")


def test_a_prefix_difference_with_an_exact_repeat_says_the_updates_depend_on_the_run_length():
    found = evidence.determinism(summary(), summary(), ("interrupted", summary(noise=1e-3)), 1e-12)
    assert found.deterministic is False and "depend on --steps" in (found.detail or "")


def test_not_deterministic_blames_no_part():
    found = evidence.not_deterministic(evidence.determinism(summary(), summary(noise=1e-9), None, 1e-12))
    assert found.lost == () and found.rule == "not-deterministic" and found.step == 4


def test_the_one_probe_that_reproduces_the_failed_resume_exactly_names_its_part():
    failed = summary(noise=0.5)
    probes = {"model": copy.deepcopy(failed), "optimizer": summary(noise=0.25)}
    named = evidence.confirm(UNKNOWN, failed, probes)
    assert named.lost == ("model",) and named.rule == "reproduced" and "--omit=model" in named.explanation


def test_several_probes_that_reproduce_it_name_no_part_but_list_them():
    failed = summary(noise=0.5)
    named = evidence.confirm(UNKNOWN, failed, {"model": copy.deepcopy(failed), "rng-python": copy.deepcopy(failed)})
    assert named.lost == () and "model, rng-python" in named.explanation


def test_no_probe_that_reproduces_it_keeps_the_cause_unknown_and_says_what_was_tried():
    named = evidence.confirm(UNKNOWN, summary(noise=0.5), {"model": summary(noise=0.25)})
    assert named.lost == () and "(model)" in named.explanation


def test_a_diagnosis_the_rules_made_is_not_overridden_by_probes():
    made = Diagnosis(lost=("data",), rule="rows", step=4, evidence="", explanation="")
    assert evidence.confirm(made, summary(), {"model": summary()}) is made


def test_generators_unused_before_k_leave_the_negative_control_without_power():
    seeded = summary()
    weak = evidence.no_power(summary(), seeded, 5, STANDARD_PARTS)
    assert weak is not None and weak.rule == "no-power" and "not used between seeding and k = 5" in weak.explanation
    used = copy.deepcopy(seeded)
    used.next["rng"]["numpy"] = 0.8
    assert evidence.no_power(summary(), used, 5, STANDARD_PARTS) is None
    assert evidence.no_power(summary(), None, 5, STANDARD_PARTS) is None


def test_every_declared_part_but_progress_is_a_candidate_even_one_whose_end_state_equals_the_continuous_runs():
    """A state that converges by itself (a loss scale, a plateau counter, a saturating warm-up) looks restored at the
    end when it was lost: end state clears no part from the probes; only a probe that reproduces the failure names
    one."""
    cont = summary()
    other = copy.deepcopy(cont)
    other.history[3]["loss"] = 9.0  # state.model and next.rng.numpy are the same at the end
    found = evidence.candidates(cont, other, Context(resumed_at=3, parts=STANDARD_PARTS))
    assert found == [part for part in STANDARD_PARTS if part != "progress"]
    assert evidence.candidates(cont, copy.deepcopy(cont), Context(resumed_at=3, parts=STANDARD_PARTS)) == []
