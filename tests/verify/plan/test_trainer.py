"""What a verification runs and expects, decided before any process starts (verify/plan/trainer.py,
verify/vocabulary/expectation.py; the processes run by verify/run/trajectories.py and verify/verification.py are held in
tests/e2e/test_verify_e2e.py)."""

from pathlib import Path

from resumeproof.common.protocol import CheckKind
from resumeproof.verify.plan import trainer as trainer_plan
from resumeproof.verify.settings import Settings
from resumeproof.verify.vocabulary.expectation import Expect
from tests.verify.test_settings import settings_of


def settings(**overrides) -> Settings:
    base = {"output": Path("/r"), "steps": 10, "points": (5,), "atol": 1e-12, "train_cmd": "t", "jobs": 2}
    return settings_of({**base, "timeout": 60.0, **overrides})


def expected(trajectories) -> list[Expect]:
    return [t.expectation.kind for t in trajectories if t.expectation is not None]


def by_name(trajectories) -> dict:
    return {t.name: t for t in trajectories}


def test_the_default_plan_is_the_protocols_four_trajectories():
    p = trainer_plan.build(settings())
    assert [t.name for t in p] == ["continuous", "interrupted", "resumed", "resumed-no-rng"]
    assert [t.after for t in p] == [(), (), ("interrupted",), ("interrupted",)]
    assert p[3].argv == [
        "t",
        "--steps",
        "5",
        "--output",
        "/r/resumed-no-rng",
        "--resume",
        "/r/interrupted/checkpoint.pt",
        "--omit-rng-restore",
    ]
    assert expected(p) == [Expect.PREFIX, Expect.CONCORDANT, Expect.DIVERGENT]
    assert p[0].expectation is None  # the continuous run is the reference


def test_every_resuming_trajectory_and_only_those_run_the_resume_command():
    p = trainer_plan.build(settings(resume_cmd="r --w 4", faults=("model",), segments=((3, 7),), cadence=1))
    resuming = {t.name for t in p if t.argv[0] == "r"}
    assert resuming == {"resumed", "resumed-no-rng", "fault-model", "chain1-seg2"}
    assert all(t.argv[:2] == ["r", "--w"] for t in p if t.name in resuming)
    assert all(t.argv[0] == "t" and not t.after for t in p if t.name not in resuming)


def test_without_a_resume_command_resumes_run_the_training_command():
    assert {t.argv[0] for t in trainer_plan.build(settings(faults=("model",)))} == {"t"}


def test_faults_resume_from_the_primary_point_and_may_report_any_step():
    p = trainer_plan.build(settings(points=(5, 2), faults=("model", "data")))
    faults = [t for t in p if t.expectation and t.expectation.is_fault]
    assert [t.argv[-1] for t in faults] == ["--omit=model", "--omit=data"]  # one token: no abbreviation can take it
    assert [t.expectation.part for t in faults] == ["model", "data"]
    assert all(t.after == ("interrupted",) for t in faults)
    named = by_name(p)
    assert named["fault-model"].reports_step is None
    assert (named["resumed-2"].reports_step, named["interrupted-2"].reports_step) == (10, 2)


def test_the_flat_fault_exports_its_input_first_in_the_same_job():
    p = trainer_plan.build(settings(faults=("flat",)))
    fault = by_name(p)["fault-flat"]
    assert fault.after == ("interrupted",) and len(fault.prepare) == 1
    assert fault.prepare[0][-4:] == ("flat", "export", "/r/interrupted/checkpoint.pt", "/r/inputs/flat.bin")
    assert fault.argv[-2:] == ["--resume-flat", "/r/inputs/flat.bin"]


def test_a_chain_resumes_each_segment_from_the_one_before():
    p = trainer_plan.build(settings(segments=((3, 3, 4),)))
    chain = [by_name(p)[f"chain1-seg{j}"] for j in (1, 2, 3)]
    assert [t.after for t in chain] == [(), ("chain1-seg1",), ("chain1-seg2",)]
    assert [t.reports_step for t in chain] == [3, 6, 10]
    assert [t.expectation.kind for t in chain] == [Expect.PREFIX, Expect.PREFIX, Expect.CONCORDANT]


def test_every_check_carries_its_identity_kind_trajectory_and_part():
    p = trainer_plan.build(settings(points=(5, 2), faults=("model",), segments=((3, 7),), cadence=1))
    ids = {t.name: t.expectation.id for t in p if t.expectation is not None}
    assert (ids["interrupted"].kind, ids["interrupted-2"].kind) == (CheckKind.PREFIX, CheckKind.PREFIX)
    assert (ids["resumed"].kind, ids["resumed-2"].kind, ids["chain1-seg2"].kind) == (CheckKind.RESUME,) * 3
    assert ids["resumed-no-rng"].kind is CheckKind.NEGATIVE_CONTROL
    assert (ids["fault-model"].kind, ids["fault-model"].part) == (CheckKind.FAULT, "model")
    assert ids["continuous-every-1"].kind is CheckKind.CADENCE
    assert all(i.trajectory == name for name, i in ids.items())


def test_the_repeat_runs_the_continuous_command_again_into_its_own_directory():
    p = trainer_plan.build(settings(repeat=True))
    repeat = by_name(p)["continuous-repeat"]
    assert repeat.argv == ["t", "--steps", "10", "--output", "/r/continuous-repeat"] and not repeat.after
    assert repeat.expectation.kind is Expect.REPEAT and not repeat.expectation.makes_check


def test_probes_resume_the_primary_point_without_one_part_each_and_make_no_check():
    probes = trainer_plan.probes(settings(points=(5, 2)), ["model", "rng-numpy"])
    assert [t.argv[-1] for t in probes] == ["--omit=model", "--omit=rng-numpy"]
    assert all(t.after == ("interrupted",) and not t.expectation.makes_check for t in probes)
    assert trainer_plan.seeded(settings()).argv[1:3] == ["--steps", "0"]


def test_the_cadence_run_writes_a_checkpoint_every_step():
    p = trainer_plan.build(settings(cadence=1))
    assert p[-1].argv[-2:] == ["--checkpoint-every", "1"]
    assert p[-1].expectation.generations
