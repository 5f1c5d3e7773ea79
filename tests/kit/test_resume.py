"""--resume auto (kit/resume.py, finding the newest valid generation through kit/rundir.py's RunDir.in_place): a fresh
start where there is nothing, a corrupt newest generation skipped, a directory of invalid checkpoints or of
strangers refused."""

from resumeproof.common import runfiles
from tests.helpers import assert_same_run, run_train, summary


def test_resume_auto_starts_fresh_when_the_run_directory_is_absent(tmp_path, continuous_run):
    proc = run_train("--until-step", "10", "--output", tmp_path / "run", "--resume", "auto")
    assert proc.returncode == 0, proc.stderr
    assert_same_run(tmp_path / "run", continuous_run)


def test_resume_auto_skips_a_corrupt_newest_generation_and_says_so(tmp_path, continuous_run):
    run = tmp_path / "run"
    proc = run_train("--steps", "6", "--output", run, "--checkpoint-every", "2", "--keep", "5")
    assert proc.returncode == 0, proc.stderr
    (run / "checkpoint.pt").unlink()  # as if killed before the final write: generations 2, 4, 6 remain
    newest = run / "step_000006.pt"
    newest.write_bytes(newest.read_bytes()[:-100])  # cut short: its name says 6, its bytes say nothing
    proc = run_train("--until-step", "10", "--output", run, "--resume", "auto")
    assert proc.returncode == 0, proc.stderr
    assert f"skipping {newest}" in proc.stderr
    assert summary(run)["meta"]["resumed_from"] == str(run / "step_000004.pt")
    assert_same_run(run, continuous_run)


def test_resume_auto_refuses_a_directory_whose_checkpoints_are_all_invalid(tmp_path):
    run = tmp_path / "run"
    assert run_train("--steps", "2", "--output", run).returncode == 0
    (run / "checkpoint.pt.sha256").write_text("0" * 64 + "  checkpoint.pt\n")
    before = {p.name: p.read_bytes() for p in run.iterdir() if p.name != runfiles.LOCK}
    proc = run_train("--until-step", "4", "--output", run, "--resume", "auto")
    assert proc.returncode == 2
    assert "holds checkpoints but no valid one; refusing to start over on top" in proc.stderr
    assert {p.name: p.read_bytes() for p in run.iterdir() if p.name != runfiles.LOCK} == before


def test_resume_auto_refuses_a_directory_that_is_not_a_run(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    proc = run_train("--until-step", "2", "--output", tmp_path, "--resume", "auto")
    assert proc.returncode == 2 and "not a run directory" in proc.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]
