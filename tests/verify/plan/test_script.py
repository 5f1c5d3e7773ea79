"""`verify --observe`'s commands and checkpoint pattern: placeholders filled token by token, templates that cannot
work refused in one line, and a checkpoint that is not where the pattern says answered with what is there."""

import json
from dataclasses import replace
from pathlib import Path

import pytest

from resumeproof.common import observation as o
from resumeproof.verify.plan import script as script_plan
from resumeproof.verify.run.trajectories import Observe, Trajectory, TrajectoryError
from resumeproof.verify.settings import EPOCHS, Settings, SettingsError
from tests.verify.test_settings import settings_of


def test_placeholders_are_filled_token_by_token_so_a_path_with_spaces_stays_one_argument():
    argv = script_plan.command(
        "python t.py --out {run} --n={steps} --from {checkpoint}", Path("/r/my run"), 8, Path("/c")
    )
    assert argv == ["python", "t.py", "--out", "/r/my run", "--n=8", "--from", "/c"]


@pytest.mark.parametrize(
    ("train", "resume", "pattern", "says"),
    [
        ("t --n {steps}", "t {run} {steps} {checkpoint}", "{run}/c", "--train-cmd: 't --n {steps}' lacks {run}"),
        ("t {run} {steps}", "t {run} {steps}", "{run}/c", "--resume-cmd: 't {run} {steps}' lacks {checkpoint}"),
        ("t {run} {steps}", "t {run} {steps} {checkpoint}", "/c/{step}", "--checkpoint: '/c/{step}' lacks {run}"),
        ("t {run} {steps} 'x", "t {run} {steps} {checkpoint}", "{run}/c", "No closing quotation"),
        ("t {run} {steps}", "t {run} {steps} {checkpoint}", "{run}/c", "--faults: 'ema': with --observe, all or among"),
    ],
)
def test_templates_that_cannot_work_are_refused_naming_what_the_user_typed(tmp_path, train, resume, pattern, says):
    faults = ("ema",) if "--faults" in says else ()
    with pytest.raises(SettingsError, match=says.replace("{", r"\{").replace("}", r"\}")):
        _settings(tmp_path, (5,), train, resume, pattern, faults)


def _settings(output: Path, points: tuple[int, ...], train: str, resume: str, pattern: str, faults=()) -> Settings:
    fields = {"steps": 10, "points": points, "atol": 0.0, "jobs": 1, "timeout": 60.0, "faults": faults}
    script = {"observe_script": True, "train_cmd": train, "resume_cmd": resume, "checkpoint": pattern}
    return settings_of({"output": output, **({} if points else {"points_from": EPOCHS}), **fields, **script})


def test_a_run_without_records_or_without_its_checkpoint_is_refused_with_what_it_did_write(tmp_path):
    run = tmp_path / "interrupted"
    run.mkdir()
    for step in (4, 8):
        (run / f"ckpt_{step}.pt").write_bytes(b"")
    pattern = "{run}/ckpt_{step}.pt"
    s = _settings(tmp_path, (5,), "t {run} {steps}", "t {run} {steps} {checkpoint}", pattern)
    record = tmp_path / "records"
    t = Trajectory("interrupted", [], run, tmp_path / "log", observe=Observe(record, "5-6", stop=(o.EXIT, 5)))
    with pytest.raises(TrajectoryError, match="the observer recorded nothing"):
        script_plan.accept(s, t)
    document = {"format": o.FORMAT, "updates": {}, "completed": 5, "stopped": 5}
    o.record_file(record, None).write_text(json.dumps(document))
    with pytest.raises(TrajectoryError, match=r"no checkpoint at .*ckpt_5.pt after update 5 \(it wrote .*ckpt_4.pt"):
        script_plan.accept(s, t)


def test_epochs_are_read_off_the_iterators_of_the_first_rank_and_none_is_refused_saying_why(tmp_path):
    s = _settings(tmp_path, (), "t {run} {steps}", "t {run} {steps} {checkpoint}", "{run}/c")
    seen = {
        1: o.Observation(rank=1, updates={}, iterators=(1, 6)),
        0: o.Observation(rank=0, updates={}, iterators=(1, 5, 9, 11)),
    }
    assert script_plan.epoch_points(s, seen) == (2, 4, 6, 8, 9)  # after 4 and 8, the middles 2, 6 and 9; 10 ends it
    with pytest.raises(TrajectoryError, match="no new DataLoader iterator after its first update"):
        script_plan.epoch_points(s, {None: o.Observation(rank=None, updates={}, iterators=(1,))})


@pytest.mark.parametrize("from_run", [True, False], ids=["resume-from-run", "resume-in-place"])
def test_every_resume_starts_from_the_interrupted_checkpoint_in_its_own_copy_only_with_resume_from_run(
    tmp_path, from_run
):
    """The resume, the negative control and each fault: with --resume-from-run each copies the interrupted run's
    folder to its own {run}, and {checkpoint} names the checkpoint in that copy; else the interrupted run's own."""
    resume = "t --out {run} --n {steps} --from {checkpoint}"
    s = _settings(tmp_path, (5,), "t --out {run} --n {steps}", resume, "{run}/ckpt.pt", ("model", "optimizer"))
    s = replace(s, subject=replace(s.scripted, resume_from_run=from_run))
    interrupted = Trajectory("interrupted", [], tmp_path / "interrupted", tmp_path / "log")
    planned = script_plan.resumes(s, interrupted, 5)
    assert [t.name for t in planned] == ["resumed", "resumed-no-rng", "fault-model", "fault-optimizer"]
    for t in planned:
        folder = t.output if from_run else interrupted.output
        assert t.argv == ["t", "--out", str(t.output), "--n", "10", "--from", str(folder / "ckpt.pt")]
        assert t.starts_from == folder / "ckpt.pt" and t.after == ("interrupted",)
        assert t.copy_of == (interrupted.output if from_run else None)
