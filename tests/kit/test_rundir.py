"""One run directory for the life of a process (kit/rundir.py): generations and --keep, one writer, a failed write
that loses nothing, the leftovers of a killed write, and a loss.jsonl that marks replayed steps."""

import resource
import shutil
import subprocess
import sys

import pytest

from resumeproof.common import losslog, runfiles
from resumeproof.kit import rundir
from tests.helpers import (
    REPO,
    TRAIN,
    kept_generations,
    run_train,
    summary,
    wait_for_steps,
)

ARGV = [sys.executable, "-B", str(TRAIN)]


def test_keep_holds_the_newest_generations_only(tmp_path):
    proc = run_train("--steps", "5", "--output", tmp_path / "run", "--checkpoint-every", "1", "--keep", "2")
    assert proc.returncode == 0, proc.stderr
    assert kept_generations(tmp_path / "run") == ["step_000004.pt", "step_000005.pt"]
    sidecars = sorted(p.name for p in (tmp_path / "run").glob("*.sha256"))
    assert sidecars == ["checkpoint.pt.sha256", "step_000004.pt.sha256", "step_000005.pt.sha256"]


def test_prune_removes_the_oldest_generations_with_their_sidecars(tmp_path):
    for step in (1, 2, 3, 4):
        (tmp_path / f"step_{step:06d}.pt").write_bytes(b"x")
        (tmp_path / f"step_{step:06d}.pt.sha256").write_text("y")
    removed = rundir.prune(tmp_path, keep=2)
    assert [p.name for p in removed] == ["step_000002.pt", "step_000001.pt"]
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == ["step_000003.pt", "step_000003.pt.sha256", "step_000004.pt", "step_000004.pt.sha256"]


@pytest.mark.parametrize(
    ("entry", "named"),
    [(ARGV, "train.py"), ([sys.executable, "-B", "-m", "resumeproof.reference"], "resumeproof.reference")],
    ids=["script", "module"],
)
def test_a_second_writer_on_the_same_run_directory_fails_at_once_naming_the_first(tmp_path, entry, named):
    run = tmp_path / "run"
    args = ("--steps", "500", "--output", str(run), "--pace", "0.2")  # still running, however slow the start
    first = subprocess.Popen([*entry, *args], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for_steps(run, 1, first)
        second = run_train("--until-step", "30", "--output", run, "--resume", "auto")
        assert second.returncode == 2
        assert f"already being written by {named} pid {first.pid}; one writer per run directory" in second.stderr
    finally:
        first.kill()
        first.wait()


def test_a_failed_write_is_a_clear_error_and_loses_nothing(tmp_path):
    run = tmp_path / "run"
    assert run_train("--steps", "3", "--output", run, "--checkpoint-every", "1").returncode == 0
    before = {p.name: p.read_bytes() for p in run.iterdir() if p.name.startswith("step_")}

    def small_files() -> None:  # in the child: no file may grow past 4 KiB, so a checkpoint write fails
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    argv = [*ARGV, "--until-step", "6", "--output", str(run), "--resume", "auto", "--checkpoint-every", "1"]
    proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, preexec_fn=small_files)
    assert proc.returncode == 2
    assert "train.py: error:" in proc.stderr and "could not write checkpoint" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert {p.name: p.read_bytes() for p in run.iterdir() if p.name.startswith("step_")} == before
    assert not [p for p in run.iterdir() if runfiles.TEMPORARY.fullmatch(p.name)]
    resumed = run_train("--until-step", "6", "--output", run, "--resume", "auto", "--checkpoint-every", "1")
    assert resumed.returncode == 0, resumed.stderr
    assert summary(run)["meta"]["resumed_from"] == str(run / "step_000003.pt")  # the newest, written before


def test_interrupted_write_leftovers_are_removed_on_the_next_start(tmp_path):
    run = tmp_path / "run"
    assert run_train("--steps", "2", "--output", run, "--checkpoint-every", "1").returncode == 0
    stale = run / ".step_000003.pt.tmp-99999"
    shutil.copyfile(run / "step_000002.pt", stale)
    proc = run_train("--until-step", "3", "--output", run, "--resume", "auto")
    assert proc.returncode == 0, proc.stderr
    assert not stale.exists() and f"removed {stale}" in proc.stderr


def test_a_kill_between_the_sidecar_and_the_rename_lets_the_run_start_over(tmp_path):
    run = tmp_path / "run"
    first = run_train("--steps", "1", "--output", run, "--checkpoint-every", "1")
    assert first.returncode == 0, first.stderr
    for name in ("step_000001.pt", "checkpoint.pt", "checkpoint.pt.sha256"):
        (run / name).unlink()  # what is left: the orphan sidecar of the first generation
    (run / ".step_000001.pt.tmp-99999").write_bytes(b"half a checkpoint")
    proc = run_train("--until-step", "3", "--output", run, "--resume", "auto")
    assert proc.returncode == 0, proc.stderr
    assert summary(run)["step"] == 3


def test_replayed_steps_are_logged_as_such_and_one_record_per_step_is_authoritative(tmp_path, continuous_run):
    run = tmp_path / "run"
    assert run_train("--steps", "3", "--output", run, "--checkpoint-every", "2").returncode == 0
    for name in ("checkpoint.pt", "checkpoint.pt.sha256"):  # as if killed after logging step 3, before its
        (run / name).unlink()  # checkpoint: the newest valid generation is step 2
    proc = run_train("--until-step", "10", "--output", run, "--resume", "auto")
    assert proc.returncode == 0, proc.stderr
    entries, broken = losslog.read(run / losslog.NAME)
    assert broken == 0
    assert [e["from_step"] for e in entries if e.get("event") == "start"] == [0, 2]
    assert [e["superseded_steps"] for e in entries if e.get("event") == "start"] == [[], [3]]
    assert [e["step"] for e in entries if e.get("replay")] == [3]
    records = losslog.authoritative(run / losslog.NAME)
    reference = summary(continuous_run)["history"]
    assert sorted(records) == list(range(1, 11))
    assert [{k: records[s][k] for k in ("step", "rows", "lr", "loss")} for s in range(1, 11)] == reference
