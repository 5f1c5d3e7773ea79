"""An unmodified script's checkpoints in the pattern's own unit: `{epoch}` is the 0-based index of the last epoch
completed, N and the updates per epoch come from a run told its length in epochs, `--interrupt-at checkpoints`
reads its points off the files the continuous run wrote, and every hint speaks in the pattern's unit."""

from dataclasses import replace
from pathlib import Path

import pytest

from resumeproof.common import observation as o
from resumeproof.verify.plan import checkpoints
from resumeproof.verify.plan import script as script_plan
from resumeproof.verify.run.trajectories import TrajectoryError
from resumeproof.verify.settings import CHECKPOINTS, EPOCHS, Settings
from tests.verify.test_settings import settings_of

TIMM = "{run}/checkpoint-{epoch}.pth.tar"
TRAIN = "t --epochs {epochs} --output {run}"


def settings(output: Path, pattern: str = TIMM, points: tuple[int, ...] = (), **more) -> Settings:
    """Settings of a script told its length in epochs (3), before its continuous run: N unknown."""
    fields = {
        "steps": 0,
        "atol": 0.0,
        "jobs": 1,
        "timeout": 60.0,
        "epochs": 3,
        **({} if points else {"points_from": EPOCHS}),
    }
    script = {"observe_script": True, "train_cmd": TRAIN, "resume_cmd": TRAIN + " --resume {checkpoint}"}
    return settings_of({"output": output, "points": points, "checkpoint": pattern, **script, **fields, **more})


def with_checkpoint(s: Settings, pattern: str) -> Settings:
    return replace(s, subject=replace(s.scripted, checkpoint=pattern))


def ran(s: Settings, updates: int) -> Settings:
    return checkpoints.measured(s, o.Observation(rank=None, updates={}, completed=updates))


def write(run: Path, *names: str) -> None:
    run.mkdir(parents=True, exist_ok=True)
    for name in names:
        (run / name).write_bytes(b"")


def test_n_and_the_updates_per_epoch_are_read_off_the_continuous_run_and_epoch_names_the_last_one_completed(tmp_path):
    s = settings(tmp_path)
    assert s.deferred and script_plan.interrupted(s) == [] and checkpoints.records(s) == "1-100000"
    s = ran(s, 12)
    assert (s.steps, s.scripted.epoch_updates, checkpoints.records(s)) == (12, 4, "1-12")
    assert checkpoints.path(s, Path("/r"), 4) == Path("/r/checkpoint-0.pth.tar")  # after the first epoch
    assert checkpoints.path(s, Path("/r"), 8) == Path("/r/checkpoint-1.pth.tar")
    assert script_plan.command(TRAIN, Path("/r"), s.steps, epochs=s.epochs) == ["t", "--epochs", "3", "--output", "/r"]
    with pytest.raises(TrajectoryError, match="ran 13 updates, not the same number in every epoch"):
        ran(settings(tmp_path), 13)


def test_checkpoints_are_the_updates_after_which_the_continuous_run_wrote_a_file_the_pattern_matches(tmp_path):
    run = tmp_path / "continuous"
    write(run, "checkpoint-0.pth.tar", "checkpoint-1.pth.tar", "checkpoint-2.pth.tar", "last.pth.tar", "summary.csv")
    s = ran(settings(tmp_path, points_from=CHECKPOINTS), 12)
    assert checkpoints.points(s, run) == (4, 8)  # the last, after update 12, leaves nothing to resume
    by_step = with_checkpoint(s, "{run}/step-{step}")  # another layout: a directory per update
    for step in (3, 6, 12):
        (run / f"step-{step}").mkdir()
    assert checkpoints.points(by_step, run) == (3, 6)
    with pytest.raises(TrajectoryError, match=r"wrote nothing that --checkpoint '\{run\}/ckpt-\{step\}' matches"):
        checkpoints.points(with_checkpoint(s, "{run}/ckpt-{step}"), run)


def test_epochs_under_an_epoch_pattern_are_the_epochs_ends_only_and_given_points_must_be_one(tmp_path):
    s = ran(settings(tmp_path), 12)
    assert script_plan.epoch_points(s, {}) == (4, 8)  # no middle: {epoch} names no checkpoint of it
    assert script_plan.epoch_points(with_checkpoint(s, "{run}/s{step}"), {}) == (2, 4, 6, 8, 10)
    checkpoints.at_epoch_ends(s.with_points((8, 4)))
    with pytest.raises(TrajectoryError, match=r"--interrupt-at 5: .* epochs here are 4 updates long: k among 4 \("):
        checkpoints.at_epoch_ends(s.with_points((5,)))


def test_a_missing_checkpoint_is_answered_in_the_patterns_unit(tmp_path):
    run = tmp_path / "interrupted"
    write(run, "checkpoint-0.pth.tar")
    s = ran(settings(tmp_path, points=(8,)), 12)
    assert checkpoints.hint(s, run) == (
        " (it wrote checkpoint-0.pth.tar after update 4: choose --interrupt-at among those updates, or checkpoints)"
    )
    # The files numbered by epoch, read as steps: 0 is no update, and the hint says what the number may be.
    by_step = with_checkpoint(s, "{run}/checkpoint-{step}.pth.tar")
    assert "among their steps; 0 is no update: if they number epochs, write {epoch}" in checkpoints.hint(by_step, run)
    write(run, "checkpoint-4.pth.tar")
    (run / "checkpoint-0.pth.tar").unlink()
    assert checkpoints.hint(by_step, run).endswith("checkpoint-4.pth.tar: choose --interrupt-at among their steps)")
