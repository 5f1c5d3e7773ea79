"""SIGTERM and SIGUSR1 in a running train.py (kit/signals.py, served by kit/rundir.py): a stop writes a checkpoint
and the resume is exact; snapshots leave the run as it was."""

import signal

from resumeproof.common import fingerprint, losslog
from tests.helpers import (
    assert_same_run,
    kept_generations,
    run_train,
    start_train,
    summary,
    wait_for_steps,
)


def test_sigterm_writes_a_checkpoint_stops_and_the_resume_is_concordant(tmp_path, continuous_run):
    run = tmp_path / "run"
    proc = start_train("--steps", "10", "--output", str(run), "--pace", "0.3")
    wait_for_steps(run, 2, proc)
    proc.send_signal(signal.SIGTERM)
    proc.send_signal(signal.SIGTERM)  # a second one only repeats the request
    assert proc.wait(timeout=30) == 0, proc.stderr.read() if proc.stderr else ""
    stopped = summary(run)
    assert stopped["meta"]["stopped_by"] == "SIGTERM" and 2 <= stopped["step"] < 10
    assert losslog.read(run / losslog.NAME)[0][-1] == {"event": "stop", "signal": "SIGTERM", "step": stopped["step"]}
    assert kept_generations(run) == [f"step_{stopped['step']:06d}.pt"]  # the checkpoint the stop wrote
    resumed = run_train("--until-step", "10", "--output", run, "--resume", "auto")
    assert resumed.returncode == 0, resumed.stderr
    assert_same_run(run, continuous_run)


def test_sigusr1_snapshots_do_not_disturb_the_run(tmp_path, continuous_run):
    run = tmp_path / "run"
    proc = start_train("--steps", "10", "--output", str(run), "--pace", "0.15", "--keep", "20")
    wait_for_steps(run, 2, proc)
    proc.send_signal(signal.SIGUSR1)
    wait_for_steps(run, 5, proc)
    proc.send_signal(signal.SIGUSR1)
    assert proc.wait(timeout=30) == 0, proc.stderr.read() if proc.stderr else ""
    assert summary(run)["meta"]["stopped_by"] is None
    assert len(kept_generations(run)) >= 2  # one per snapshot, each a valid generation
    for name in kept_generations(run):
        fingerprint.verify(run / name)
    assert_same_run(run, continuous_run)
