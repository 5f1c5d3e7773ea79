"""Long runs: generations and --keep, --resume auto in place, one writer, failed writes, SIGTERM and
SIGUSR1, and a loss.jsonl that says which record of a replayed step is authoritative."""

import json
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from resumeproof.common import fingerprint, losslog, protocol, runfiles
from resumeproof.kit import rundir
from resumeproof.verify.compare import compare_keys, merge
from tests.helpers import REPO, TRAINERS, run_train, run_verify

TRAIN = [sys.executable, "-B", str(REPO / "train.py")]


def summary(run: Path) -> dict:
    return json.loads((run / protocol.SUMMARY).read_text())


def assert_concordant(run: Path, reference: Path) -> None:
    result = merge(compare_keys(summary(reference), summary(run), protocol.COMPARED_KEYS, 1e-12).values())
    assert result.concordant, result.mismatches[:3]


def start(*args: str) -> subprocess.Popen:
    return subprocess.Popen([*TRAIN, *args], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for_steps(run: Path, count: int, proc: subprocess.Popen, timeout: float = 30) -> None:
    """Until `count` updates are logged: the trainer is running, past its start-up."""
    log, deadline = run / losslog.NAME, time.monotonic() + timeout
    while not (log.exists() and log.read_text().count('"loss"') >= count):
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        assert time.monotonic() < deadline, "the trainer never got going"
        time.sleep(0.02)


def kept(run: Path) -> list[str]:
    return sorted(p.name for p in run.glob("step_*.pt"))


def test_sigterm_writes_a_checkpoint_stops_and_the_resume_is_concordant(tmp_path, continuous_run):
    run = tmp_path / "run"
    proc = start("--steps", "10", "--output", str(run), "--pace", "0.3")
    wait_for_steps(run, 2, proc)
    proc.send_signal(signal.SIGTERM)
    proc.send_signal(signal.SIGTERM)  # a second one only repeats the request
    assert proc.wait(timeout=30) == 0, proc.stderr.read() if proc.stderr else ""
    stopped = summary(run)
    assert stopped["meta"]["stopped_by"] == "SIGTERM" and 2 <= stopped["step"] < 10
    assert losslog.read(run / losslog.NAME)[0][-1] == {"event": "stop", "signal": "SIGTERM", "step": stopped["step"]}
    assert kept(run) == [f"step_{stopped['step']:06d}.pt"]  # the checkpoint the stop wrote
    resumed = run_train("--until-step", "10", "--output", run, "--resume", "auto")
    assert resumed.returncode == 0, resumed.stderr
    assert_concordant(run, continuous_run)


def test_sigusr1_snapshots_do_not_disturb_the_run(tmp_path, continuous_run):
    run = tmp_path / "run"
    proc = start("--steps", "10", "--output", str(run), "--pace", "0.15", "--keep", "20")
    wait_for_steps(run, 2, proc)
    proc.send_signal(signal.SIGUSR1)
    wait_for_steps(run, 5, proc)
    proc.send_signal(signal.SIGUSR1)
    assert proc.wait(timeout=30) == 0, proc.stderr.read() if proc.stderr else ""
    assert summary(run)["meta"]["stopped_by"] is None
    assert len(kept(run)) >= 2  # one per snapshot, each a valid generation
    for name in kept(run):
        fingerprint.verify(run / name)
    assert_concordant(run, continuous_run)


def test_keep_holds_the_newest_generations_only(tmp_path):
    proc = run_train("--steps", "5", "--output", tmp_path / "run", "--checkpoint-every", "1", "--keep", "2")
    assert proc.returncode == 0, proc.stderr
    assert kept(tmp_path / "run") == ["step_000004.pt", "step_000005.pt"]
    assert sorted(p.name for p in (tmp_path / "run").glob("*.sha256")) == [
        "checkpoint.pt.sha256", "step_000004.pt.sha256", "step_000005.pt.sha256",
    ]  # fmt: skip


def test_resume_auto_starts_fresh_when_the_run_directory_is_absent(tmp_path, continuous_run):
    proc = run_train("--until-step", "10", "--output", tmp_path / "run", "--resume", "auto")
    assert proc.returncode == 0, proc.stderr
    assert_concordant(tmp_path / "run", continuous_run)


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
    assert_concordant(run, continuous_run)


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


@pytest.mark.parametrize(
    ("entry", "named"),
    [(TRAIN, "train.py"), ([sys.executable, "-B", "-m", "resumeproof.reference"], "resumeproof.reference")],
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

    argv = [*TRAIN, "--until-step", "6", "--output", str(run), "--resume", "auto", "--checkpoint-every", "1"]
    proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, preexec_fn=small_files)
    assert proc.returncode == 2
    assert "train.py: error:" in proc.stderr and "could not write checkpoint" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert {p.name: p.read_bytes() for p in run.iterdir() if p.name.startswith("step_")} == before
    assert not [p for p in run.iterdir() if runfiles.TEMPORARY.fullmatch(p.name)]
    resumed = run_train("--until-step", "6", "--output", run, "--resume", "auto", "--checkpoint-every", "1")
    assert resumed.returncode == 0, resumed.stderr
    assert summary(run)["meta"]["resumed_from"] == str(run / "step_000003.pt")  # the newest, written before


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


def test_a_line_cut_by_a_kill_is_ended_never_rewritten(tmp_path):
    log = tmp_path / losslog.NAME
    losslog.append(log, {"step": 1, "rows": [0], "lr": 0.1, "loss": 1.0})
    with open(log, "ab") as f:
        f.write(b'{"step": 2, "ro')  # the kill
    cut = log.read_bytes()
    assert losslog.start(log, 1) == set()
    assert log.read_bytes().startswith(cut + b"\n")
    assert losslog.read(log)[1] == 1 and sorted(losslog.authoritative(log)) == [1]


def test_prune_removes_the_oldest_generations_with_their_sidecars(tmp_path):
    for step in (1, 2, 3, 4):
        (tmp_path / f"step_{step:06d}.pt").write_bytes(b"x")
        (tmp_path / f"step_{step:06d}.pt.sha256").write_text("y")
    removed = rundir.prune(tmp_path, keep=2)
    assert [p.name for p in removed] == ["step_000002.pt", "step_000001.pt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "step_000003.pt", "step_000003.pt.sha256", "step_000004.pt", "step_000004.pt.sha256",
    ]  # fmt: skip


@pytest.mark.parametrize("args", [(), ("--steps", "2", "--until-step", "4")])
def test_exactly_one_of_steps_and_until_step(tmp_path, args):
    proc = run_train("--output", tmp_path / "run", *args)
    assert proc.returncode == 2 and "exactly one of --steps and --until-step" in proc.stderr


def test_interrupted_write_leftovers_are_removed_on_the_next_start(tmp_path):
    run = tmp_path / "run"
    assert run_train("--steps", "2", "--output", run, "--checkpoint-every", "1").returncode == 0
    stale = run / ".step_000003.pt.tmp-99999"
    shutil.copyfile(run / "step_000002.pt", stale)
    proc = run_train("--until-step", "3", "--output", run, "--resume", "auto")
    assert proc.returncode == 0, proc.stderr
    assert not stale.exists() and f"removed {stale}" in proc.stderr


def test_a_pivot_keeps_the_state_changes_the_lr_and_is_recorded(tmp_path, interrupted_run):
    run = tmp_path / "pivoted"
    proc = run_train(
        "--steps", "5", "--output", run, "--resume", interrupted_run / "checkpoint.pt", "--pivot", "lr=0.01"
    )
    assert proc.returncode == 0, proc.stderr
    before, after = summary(interrupted_run), summary(run)
    assert after["history"][:5] == before["history"]  # the history is carried, not reset
    first = after["history"][5]
    assert first["pivot"] == {"lr": [0.03, 0.01]}
    assert first["lr"] == pytest.approx(before["next"]["lr"] / 3, rel=1e-15)  # the schedule keeps its place
    assert after["meta"]["provenance"] == [{"step": 5, "pivot": {"lr": [0.03, 0.01]}}]
    log = losslog.read(run / losslog.NAME)[0]
    assert log[0]["event"] == "start" and log[0]["pivot"] == {"lr": [0.03, 0.01]}
    again = run_train("--steps", "1", "--output", tmp_path / "plain", "--resume", run / "checkpoint.pt")
    assert again.returncode == 2 and "written by another experiment: lr=0.01 (now 0.03)" in again.stderr
    args = ("--steps", "1", "--output", tmp_path / "same", "--resume", run / "checkpoint.pt", "--pivot", "lr=0.01")
    same = run_train(*args)
    assert same.returncode == 0, same.stderr
    assert summary(tmp_path / "same")["meta"]["provenance"] == after["meta"]["provenance"]  # no second pivot


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--pivot", "dropout=0.1"), "only lr can change on resume"),
        (("--pivot", "lr=fast"), "is not a number"),
        (("--pivot", "lr=0.01"), "--pivot changes a resumed run"),
    ],
)
def test_a_pivot_is_only_what_the_flag_allows(tmp_path, args, message):
    proc = run_train("--steps", "1", "--output", tmp_path / "run", *args)
    assert proc.returncode == 2 and message in proc.stderr
    assert not (tmp_path / "run").exists()


def test_the_verifier_never_calls_a_pivoted_resume_concordant(tmp_path):
    cmd = shlex.join([sys.executable, "-B", str(TRAINERS / "pivots_on_resume.py")])
    proc = run_verify("--output", tmp_path / "v", "--steps", "4", "--interrupt-at", "2", "--train-cmd", cmd)
    assert proc.returncode == 1, proc.stderr
    report = json.loads((tmp_path / "v" / "verification.json").read_text())
    assert report["positive"] is False
    assert report["comparison"]["full_resume"]["first_mismatch"] == "history[2]"  # the record names the pivot
    full = next(c for c in report["checks"] if c["name"].startswith("resumed (from step 2)"))
    assert "only right ['pivot']" in full["detail"]
