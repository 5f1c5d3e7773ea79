"""A preempted trajectory's job (verify/run/launch/preempt.py) on the real two-node Slurm (tests/slurm_cluster.py),
and job.py's patient start, which leaves the job's signals to the command and says when two starts overlap."""

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from resumeproof.verify.run.launch import SIGNAL, Launch, LaunchError, Preempt, SlurmSignal, job
from resumeproof.verify.run.launch.preempt import Preempted, Preempter
from resumeproof.verify.run.trajectories import Trajectory, run_all
from resumeproof.verify.vocabulary.status import Status
from tests.helpers import TRAIN

pytestmark = pytest.mark.xdist_group("slurm")  # one worker, one cluster
JOB = [sys.executable, "-B", job.__file__]


def test_a_patient_start_takes_the_jobs_signals_for_its_command_and_returns_the_commands_code(tmp_path):
    """The job's signal and the requeue's SIGTERM are the command's to handle: the start neither dies of them nor
    kills the command, whose own exit code it returns once the command is done."""
    go = tmp_path / "go"
    command = (
        f"import pathlib, time\nwhile not pathlib.Path({str(go)!r}).exists(): time.sleep(0.02)\nraise SystemExit(3)"
    )
    starts, log = tmp_path / "starts", tmp_path / "log"
    argv = [*JOB, job.PATIENT, f"{int(signal.SIGUSR1)},{int(signal.SIGTERM)}", str(log), str(starts), "--"]
    start = subprocess.Popen([*argv, sys.executable, "-c", command])
    deadline = time.monotonic() + 30
    while not Path(f"{starts}.pids").exists():
        assert time.monotonic() < deadline and start.poll() is None
        time.sleep(0.02)
    start.send_signal(signal.SIGUSR1)
    start.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    assert start.poll() is None  # neither signal ended it, and its command still runs
    go.touch()
    assert start.wait(timeout=30) == 3
    assert [s.overlapping for s in job.started(str(starts))] == [""]


def test_a_start_says_which_earlier_starts_command_still_runs_on_its_machine(tmp_path):
    """Two writers in one folder: a restart that begins while the first start's command still runs says its pid."""
    starts = tmp_path / "starts"
    orphan = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    try:
        Path(f"{starts}.pids").write_text(
            f"{job.socket.gethostname()}\t{orphan.pid}\n{job.socket.gethostname()}\t{ended.pid}\n"
        )
        again = subprocess.run([*JOB, job.PATIENT, "15", str(tmp_path / "log"), str(starts), "--", "true"], timeout=30)
    finally:
        orphan.kill()
        orphan.wait()
    assert again.returncode == 0
    assert [s.overlapping for s in job.started(str(starts))] == [str(orphan.pid)]


class Overlapping:
    """A launcher whose preempted job's restart began while the first start's command ran on."""

    def preempted(self, argv, log, output, timeout, env, plan) -> Preempted:
        starts = (job.Start("vm", "", "n1"), job.Start("vm", "", "n1", "1", "4242"))
        return Preempted("requeue", "USR1", 3, "9", 3, "COMPLETED", 1, 0, starts, resumed_from=(4,))

    def launch(self, argv, log, timeout, env):
        raise AssertionError("a preempted trajectory is never launched as an ordinary job")

    def close(self) -> None:
        pass


def test_two_starts_that_ran_at_once_are_refused_never_judged(tmp_path):
    t = Trajectory("preempted", ["t"], tmp_path / "out", tmp_path / "t.log", preempt=Preempt("requeue", 3))
    run_all([t], 1, 60, accept=lambda _: pytest.fail("never accepted"), launcher=Overlapping())  # type: ignore[arg-type]
    assert t.outcome.status == Status.FAILED and t.outcome.placement is not None and t.outcome.placement.attempts == 2
    assert t.outcome.error == (
        f"preempted: start 2 of job 9 began while an earlier start's command (pid 4242) still ran: two writers in "
        f"{tmp_path / 'out'}, refused, not judged"
    )


def test_a_trajectory_the_local_launcher_would_run_cannot_be_preempted(tmp_path):
    t = Trajectory("preempted", ["true"], tmp_path / "out", tmp_path / "t.log", preempt=Preempt("signal", 3))
    run_all([t], 1, 60, accept=lambda _: None)
    assert (
        t.outcome.status == Status.FAILED
        and t.outcome.error == "preempted: --preempt needs --launcher slurm: Slurm preempts the job"
    )


def train(run: Path) -> list[str]:
    return [sys.executable, "-B", str(TRAIN), "--resume", "auto", "--until-step", "8", "--output", str(run)]


def test_a_signal_for_the_batch_shell_is_passed_on_to_the_step_as_a_users_trap_does(
    slurm_cluster, tmp_path, monkeypatch
):
    """B:USR1 reaches only the batch shell; the job's script passes it on to srun, which signals the command."""
    for name, value in slurm_cluster.env.items():
        monkeypatch.setenv(name, value)
    plan = Preempt(SIGNAL, 3, SlurmSignal("USR1", 90, batch=True))
    argv = [*train(tmp_path / "run"), "--pace", "0.25", "--requeue-on", "USR1"]
    done = Preempter(Launch(launcher="slurm"), tmp_path / "launches").run(
        argv, tmp_path / "t.log", tmp_path / "run", 180, None, plan
    )
    assert (done.signal, done.state, done.restarts, done.exit_code) == ("B:USR1@90", "COMPLETED", 1, 0)
    assert done.stopped_by == "SIGUSR1" and done.requeued_itself and done.resumed_from == (done.stopped_after,)
    assert [(s.node in ("n1", "n2"), s.restart) for s in done.starts] == [(True, ""), (True, "1")]
    assert done.holds == ("released",) and done.delivered_after is not None and done.delivered_after >= 3


def test_a_job_that_ends_before_the_update_it_was_to_be_preempted_after_is_one_line(
    slurm_cluster, tmp_path, monkeypatch
):
    """A command that logs no updates (or ends first) was never preempted: said, not judged as never requeued."""
    for name, value in slurm_cluster.env.items():
        monkeypatch.setenv(name, value)
    preempter = Preempter(Launch(launcher="slurm"), tmp_path / "launches")
    with pytest.raises(LaunchError) as said:
        preempter.run(["true"], tmp_path / "t.log", tmp_path / "run", 120, None, Preempt(SIGNAL, 3))
    assert " ended (COMPLETED) before update 3 was logged (" in str(said.value)
    assert str(said.value).endswith(
        "nothing was preempted; --preempt follows the updates a trainer logs there (docs/cluster.md)"
    )
