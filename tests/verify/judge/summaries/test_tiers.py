"""The restore tier of a protocol trainer that is not deterministic (judge/summaries/tiers.py), on summaries
built by hand: a resume of 0 updates against what the interrupted run saved, each part whose state differs named, in
the trainer's own names and key layouts, and nothing named where no key tells."""

from dataclasses import replace

from resumeproof.common import observation as o
from resumeproof.common.protocol import REPEATS, CheckId, CheckKind
from resumeproof.verify.judge.summaries.evidence import Evidence
from resumeproof.verify.judge.summaries.held import Against
from resumeproof.verify.judge.summaries.tiers import fed, restored
from resumeproof.verify.run.summary import Summary
from resumeproof.verify.run.trajectories import Trajectory
from resumeproof.verify.vocabulary.expectation import Expect, Expectation
from resumeproof.verify.vocabulary.findings import AT_RESTORE, Determinism
from tests.helpers import REPO

HISTORY = [{"step": 1, "rows": [0, 1], "lr": 0.1, "loss": 1.0}, {"step": 2, "rows": [2, 3], "lr": 0.1, "loss": 0.5}]


def summary(state: dict, draws: dict, step: int = 2, eval_: float = 0.25) -> Summary:
    return Summary(step=step, history=HISTORY[:step], state=state, next={"lr": 0.1, "rng": draws}, eval=eval_, meta={})


def resume(name: str = "resumed") -> Trajectory:
    e = Expectation(kind=Expect.CONCORDANT, id=CheckId(kind=CheckKind.RESUME, trajectory=name), name=name, resumed_at=2)
    return Trajectory(name, [], REPO, REPO, after=("interrupted",), planned=e)


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
    assert not found.same and said.rule == AT_RESTORE and said.step == 3
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


# What the first resumed update is fed (tiers.fed): the observer's records, built by hand.
def recorded(batch: str = "b", model: str = "w", calls: int = 2, os_seeded: str = "os") -> o.Recorded:
    """One update: a kit generator, Python's `random` seeded by the OS (`os_seeded`, nothing draws from it)."""
    return o.Recorded.of(
        {
            o.FORWARD: {
                o.GENERATORS: {o.KIT: {"numpy": "g"}, o.GLOBAL: {"python": os_seeded}},
                o.BATCH: batch,
                o.MODEL: {"w": model},
                o.ATTRIBUTES: {"model.gate.calls": calls},
            },
            o.STEP: {o.OPTIMIZER: {"0.exp_avg": model}, o.GROUPS: [{"lr": 0.1}]},
        }
    )


def process(updates: dict[int, o.Recorded]) -> dict:
    return {None: o.Observation(rank=None, updates=updates)}


def against(runs: list[dict[int, o.Recorded]], twin: o.Recorded | None, resumed: o.Recorded) -> Against:
    observed = {name: process(u) for name, u in zip(("continuous", *REPEATS), runs, strict=True)}
    observed |= {"resumed": process({1: resumed})} | ({"restored-inputs": process({1: twin})} if twin else {})
    det = Determinism(repeated=True, deterministic=False)
    return Against(
        summaries={},
        atol=0.0,
        parts=PARTS,
        epoch_starts=frozenset(),
        determinism=det,
        found=Evidence(observed=observed),
    )


PARTS = ("model", "optimizer", "data", "rng-numpy")


def runs(**at_3: list) -> list[dict[int, o.Recorded]]:
    """Three runs of the command: update 1, update 2 (k) and update 3 (k+1), each run's update 3 as `at_3` says."""
    return [
        {1: recorded(calls=0), 2: recorded(calls=1), 3: recorded(**{key: values[n] for key, values in at_3.items()})}
        for n in range(3)
    ]


def test_a_batch_each_process_maps_anew_fails_the_restore_against_a_second_resume_of_the_checkpoint():
    """Every run feeds update 3 another batch (a vocabulary built from a set of strings): no run is the reference,
    but two resumes of one checkpoint must be fed alike, and these are not."""
    twin, resumed = recorded(batch="t", os_seeded="os-2"), recorded(batch="x", os_seeded="os-3")
    found = fed(resume(), against(runs(batch=["b1", "b2", "b3"]), twin, resumed), 2)
    assert found is not None and not found.passed and found.id.kind is CheckKind.RESTORE
    assert found.first_mismatch == "batch" and found.diagnosis.lost == ("data",)
    assert "batch differs from another resume of the same checkpoint's" in found.diagnosis.explanation


def test_a_batch_the_checkpoint_decides_passes_though_no_two_runs_agree_on_it():
    found = fed(resume(), against(runs(batch=["b1", "b2", "b3"]), recorded(batch="t"), recorded(batch="t")), 2)
    assert found is not None and found.passed


def test_state_every_run_agrees_on_is_held_to_it_where_both_resumes_lose_it_alike():
    """A forward counter every run holds at 2 entering update 3; both resumes restart it at 0: they agree with each
    other, not with the runs."""
    found = fed(resume(), against(runs(calls=[2, 2, 2]), recorded(calls=0), recorded(calls=0)), 2)
    assert found is not None and not found.passed and found.diagnosis.lost == ("model.gate.calls",)
    assert "model.gate.calls: 2 in every run of the command, 0 after the restore" in found.diagnosis.explanation


def test_weights_the_runs_round_apart_are_held_to_the_second_resume_alone():
    found = fed(resume(), against(runs(model=["w1", "w2", "w3"]), recorded(model="r"), recorded(model="r")), 2)
    assert found is not None and found.passed


def test_without_the_second_resumes_records_nothing_is_claimed():
    assert fed(resume(), against(runs(), None, recorded()), 2) is None


def test_weights_every_run_agrees_on_by_chance_are_no_reference_for_another_process():
    """Runs that round apart may not have yet at update 3: their weights agree among them, not with the interrupted
    process's, whose checkpoint both resumes load. Only the second resume holds the weights (and the restore of 0
    updates holds them to what was saved)."""
    found = fed(resume(), against(runs(model=["w", "w", "w"]), recorded(model="r"), recorded(model="r")), 2)
    assert found is not None and found.passed
