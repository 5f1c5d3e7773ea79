"""The restore tier of a protocol trainer that is not deterministic (verify/judge/summary_tiers.py), on summaries
built by hand: a resume of 0 updates against what the interrupted run saved, each part whose state differs named, in
the trainer's own names and key layouts, and nothing named where no key tells."""

from dataclasses import replace

from resumeproof.common.protocol import CheckId, CheckKind
from resumeproof.verify.judge.findings import RESTORED
from resumeproof.verify.judge.summary_tiers import restored
from resumeproof.verify.plan.expectation import Expect, Expectation
from resumeproof.verify.run.summary import Summary
from resumeproof.verify.run.trajectories import Trajectory
from tests.helpers import REPO

HISTORY = [{"step": 1, "rows": [0, 1], "lr": 0.1, "loss": 1.0}, {"step": 2, "rows": [2, 3], "lr": 0.1, "loss": 0.5}]


def summary(state: dict, draws: dict, step: int = 2, eval_: float = 0.25) -> Summary:
    return Summary(step=step, history=HISTORY[:step], state=state, next={"lr": 0.1, "rng": draws}, eval=eval_, meta={})


def resume(name: str = "resumed") -> Trajectory:
    e = Expectation(kind=Expect.CONCORDANT, id=CheckId(kind=CheckKind.RESUME, trajectory=name), name=name, resumed_at=2)
    return Trajectory(name, [], REPO, REPO, after=("interrupted",), expectation=e)


def held(saved: Summary, twin: Summary, parts: tuple[str, ...], name: str = "resumed"):
    twin_name = "restored" if name == "resumed" else f"restored-{name}"
    return restored(resume(name), {"interrupted": saved, twin_name: twin}, parts, 2)


SAVED = summary({"net": {"w": [1.0, 2.0]}, "opt": {"m": [0.1]}, "sched": {"n": 2}}, {"shuffle": 0.3, "torch": 0.7})


def test_a_restore_that_equals_what_was_saved_passes_whatever_eval_says():
    found = held(SAVED, replace(SAVED, eval=0.2500001), ("net", "opt", "sched", "rng-shuffle", "rng-torch"))
    assert found is not None and found.same and found.check.id.kind is CheckKind.RESTORE
    assert found.check.diagnosis is None


def test_each_part_whose_state_differs_at_the_restore_is_named_in_the_trainers_own_words():
    twin = summary({"net": {"w": [1.0, 2.0]}, "opt": {"m": [0.0]}, "sched": {"n": 2}}, {"shuffle": 0.9, "torch": 0.7})
    found = held(SAVED, twin, ("net", "opt", "sched", "rng-shuffle", "rng-torch"))
    said = found.check.diagnosis
    assert not found.same and said.rule == RESTORED and said.step == 3
    assert said.lost == ("opt", "rng-shuffle")  # nothing ran: the moments did not move the draws, both were lost
    assert found.check.first_mismatch == "state.opt.m[0]" and set(found.caught_by) == {"state", "next"}
    assert said.sentence().startswith("lost opt, rng-shuffle at the restore, before update 3")


def test_a_step_or_history_that_differs_at_the_restore_is_the_progress():
    found = held(SAVED, summary(SAVED.state, SAVED.next["rng"], step=1), ("net", "progress", "rng-torch"))
    assert found.check.diagnosis.lost == ("progress",)


def test_a_state_key_that_names_no_declared_part_is_said_and_nothing_is_named():
    saved = summary({"weights": {"w": [1.0]}, "counter": 4}, {"torch": 0.7})
    twin = summary({"weights": {"w": [1.0]}, "counter": 0}, {"torch": 0.7})
    said = held(saved, twin, ("model", "rng-torch")).check.diagnosis
    assert said.lost == () and "state.counter names no declared part" in said.explanation
    assert said.sentence().startswith("cause unknown at the restore")


def test_a_fault_resume_is_held_by_its_own_twin():
    twin = summary({**SAVED.state, "sched": {"n": 0}}, SAVED.next["rng"])
    found = held(SAVED, twin, ("net", "opt", "sched"), name="fault-sched")
    assert found.check.id.trajectory == "fault-sched" and found.check.diagnosis.lost == ("sched",)
