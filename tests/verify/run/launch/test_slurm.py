"""The Slurm launcher through submitit: real jobs on a real two-node Slurm on this machine (tests/slurm_cluster.py) for
what a cluster decides (node names and addresses, a refused requeue, a job that ends without a result); submitit's
local executor (the same job objects, run as processes here) for the exit code, the log, the environment,
cancellation and Ctrl-C; a fake scheduler only where a real one cannot be made to misbehave on demand (a job whose
command starts twice, a job that never starts)."""

import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from resumeproof import cli
from resumeproof.verify.run import launch
from resumeproof.verify.run.launch import SUBMITIT_CLUSTER_ENV, Launch, LaunchError, job
from resumeproof.verify.run.launch.slurm import PORT_BASE, Slurm, every_node, node_starts
from resumeproof.verify.run.trajectories import Trajectory, run_all
from resumeproof.verify.vocabulary.status import Status
from tests.slurm_cluster import NODES

SLURM = Launch(launcher="slurm")
# Writes its pid, then waits to be cancelled: what a cancelled job must not leave behind.
SLEEPER = "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(600)"
# A sleeper that outlives a cancel's SIGTERM (killed at the end of KillWait), its job id beside its pid: cancelled by
# someone else, its job ends without a result, whether or not the SIGTERM reaches the command before the job's code.
STUBBORN = (
    "import os, signal, sys; signal.signal(signal.SIGTERM, signal.SIG_IGN);"
    "open(sys.argv[1] + '.job', 'w').write(os.environ.get('SLURM_JOB_ID', ''));" + SLEEPER
)


@pytest.fixture
def local_jobs(tmp_path, monkeypatch) -> Iterator[Slurm]:
    """The Slurm launcher on submitit's local executor, started as from a terminal. The executor cancels a job with
    a SIGINT to its controller, which inherits this process's SIGINT: a suite started in the background of a script
    (`pytest &`) ignores it, and so would every controller (a real cluster's scancel depends on nothing here)."""
    monkeypatch.setenv(SUBMITIT_CLUSTER_ENV, "local")
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield Slurm(SLURM, tmp_path / "launches")
    signal.signal(signal.SIGINT, before)


def gone(pid_file: Path) -> bool:
    """Whether the process whose pid the file holds has ended (waited for by submitit, or by nobody: a zombie)."""
    pid = int(pid_file.read_text())
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ")[1].startswith("Z")
    except FileNotFoundError:
        return True


def wait_until(condition, tries: int = 600) -> bool:
    """`condition` polled until it holds (0.05 s apart; False if it never does)."""
    event = threading.Event()
    for _ in range(tries):
        if condition():
            return True
        event.wait(0.05)
    return False


def test_a_job_runs_the_command_once_with_its_environment_into_its_log(local_jobs, tmp_path):
    log = tmp_path / "t.log"
    argv = [sys.executable, "-c", "import os; print(os.environ['SEEN']); raise SystemExit(3)"]
    ran = local_jobs.launch(argv, log, 120, {**os.environ, "SEEN": "the observer's variable"})
    assert ran.exit_code == 3 and "the observer's variable" in log.read_text()
    where = ran.placement
    assert where.attempts == 1 and where.host and where.job_id
    assert where.launcher == "slurm (submitit's local executor)"  # never passed off as a cluster's job


def test_the_trajectorys_environment_changes_the_nodes_and_leaves_the_nodes_own_variables(
    local_jobs, tmp_path, monkeypatch
):
    """Only what the trajectory's environment changes travels: a variable it sets, one it removes (the observer
    never inherits STOP and BLOCK), while the job's own (here submitit's job id; on a cluster SLURM_*, the
    allocation's CUDA_VISIBLE_DEVICES) stay."""
    monkeypatch.setenv("REMOVED_BY_THE_TRAJECTORY", "x")
    env = {k: v for k, v in os.environ.items() if k != "REMOVED_BY_THE_TRAJECTORY"} | {"SET": "y"}
    show = (
        "import os; print([os.environ.get(k) for k in ('SET', 'REMOVED_BY_THE_TRAJECTORY', 'SUBMITIT_LOCAL_JOB_ID')])"
    )
    ran = local_jobs.launch([sys.executable, "-c", show], tmp_path / "t.log", 120, env)
    assert ran.exit_code == 0
    assert f"['y', None, '{ran.placement.job_id}']" in (tmp_path / "t.log").read_text()


def test_a_command_that_cannot_start_exits_127_and_says_why_in_its_log(local_jobs, tmp_path):
    ran = local_jobs.launch(["/no-such-command"], tmp_path / "t.log", 120, None)
    assert ran.exit_code == job.CANNOT_START and ran.placement.attempts == 1
    assert "cannot start '/no-such-command' on " in (tmp_path / "t.log").read_text()


def test_a_job_on_two_nodes_runs_the_command_once_per_node_with_torchruns_rendezvous(tmp_path, monkeypatch):
    """Each task (a node; here each of two tasks stands in for one) gets the same PET_NNODES, address and port and its
    own PET_NODE_RANK, which torchrun reads for --nnodes, --node-rank, --master-addr and --master-port; the second
    node's failure is the job's."""
    monkeypatch.setenv(SUBMITIT_CLUSTER_ENV, "local")
    names = ("PET_NNODES", "PET_NODE_RANK", "PET_MASTER_ADDR", "PET_MASTER_PORT", "SET")
    show = f"import os; e = [os.environ.get(k) for k in {names!r}]; print(*e); raise SystemExit(3 * int(e[1]))"
    log = tmp_path / "t.log"
    slurm = Slurm(Launch(launcher="slurm", nodes=2), tmp_path / "launches")
    ran = slurm.launch([sys.executable, "-c", show], log, 120, {**os.environ, "SET": "y"})
    port = PORT_BASE + int(ran.placement.job_id[-4:])
    assert sorted(log.read_text().splitlines()) == [f"2 {node} {socket.gethostname()} {port} y" for node in (0, 1)]
    assert ran.exit_code == 3
    assert ran.placement.attempts == 1 and ran.placement.host == f"{socket.gethostname()},{socket.gethostname()}"


def sleeping(launcher: Slurm, folder: Path, code: str = SLEEPER) -> tuple[threading.Thread, Path, list[str]]:
    """A job of `code` launched in a thread, once its command runs: the thread, its pid file, the errors it raised."""
    pid, raised = folder / "pid", []

    def launched() -> None:
        try:
            launcher.launch([sys.executable, "-c", code, str(pid)], folder / "t.log", 600, None)
        except LaunchError as err:
            raised.append(str(err))

    thread = threading.Thread(target=launched)
    thread.start()
    assert wait_until(pid.exists)
    return thread, pid, raised


def test_closing_the_launcher_cancels_a_running_job_and_its_command(local_jobs, tmp_path):
    thread, pid, raised = sleeping(local_jobs, tmp_path)
    local_jobs.close()
    thread.join()
    assert raised and raised[0].endswith("cancelled")
    assert wait_until(lambda: gone(pid))


def test_ctrl_c_during_a_run_cancels_every_submitted_job(local_jobs, tmp_path):
    pid = tmp_path / "pid"
    t = Trajectory("sleeper", [sys.executable, "-c", SLEEPER, str(pid)], tmp_path / "o", tmp_path / "t.log")

    def interrupt() -> None:
        if pid.exists():  # the job's command runs: the user presses Ctrl-C
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_all([t], jobs=1, timeout=600, accept=lambda _: None, refresh=interrupt, launcher=local_jobs)
    assert wait_until(lambda: gone(pid))


class Finished:
    """A fake job already done: what submitit's job object answers once the scheduler is through with it."""

    job_id, state = "7", "COMPLETED"

    def __init__(self, code: int) -> None:
        self.code, self.cancelled = code, False

    def done(self) -> bool:
        return True

    def result(self) -> int:
        return self.code

    def results(self) -> list[int]:
        return [self.code]

    def cancel(self, check: bool = True) -> None:
        self.cancelled = True


class Requeued:
    """A scheduler that ran the job twice, as a requeue after a preemption does: the job function itself runs twice.
    submitit's local executor cannot be made to requeue a job that is not checkpointable; a real Slurm can."""

    cluster = "slurm"

    def submit(self, function, *args):
        function(*args)
        return Finished(function(*args))


class Pending(Finished):
    """A job the scheduler never starts (no free node)."""

    state = "PENDING"

    def done(self) -> bool:
        return False


class NeverStarts:
    cluster = "slurm"

    def __init__(self) -> None:
        self.job = Pending(0)

    def submit(self, function, *args):
        return self.job


def test_a_trajectory_whose_command_started_twice_is_refused_and_its_attempts_recorded(tmp_path):
    folder = tmp_path / "launches"
    folder.mkdir()
    t = Trajectory("continuous", [sys.executable, "-c", "pass"], tmp_path / "o", tmp_path / "t.log")
    run_all([t], jobs=1, timeout=60, accept=lambda _: None, launcher=Slurm(SLURM, folder, executor=Requeued()))
    assert t.outcome.status == Status.FAILED and t.outcome.placement is not None and t.outcome.placement.attempts == 2
    assert "started 2 times (job 7: retried or requeued by the scheduler)" in (t.outcome.error or "")


def test_a_job_whose_second_node_started_twice_is_refused(tmp_path):
    """The refusal broken on another node: the first node started once, the second twice (a task restarted)."""

    class SecondNodeTwice(Requeued):
        def submit(self, function, *args):
            starts = args[-1]
            Path(starts).write_text("node-1\t\tn1\n")
            Path(node_starts(starts, 1)).write_text("node-2\t\tn2\nnode-2\t\tn2\n")
            return Finished(0)

    folder = tmp_path / "launches"
    folder.mkdir()
    t = Trajectory("continuous", [sys.executable, "-c", "pass"], tmp_path / "o", tmp_path / "t.log")
    slurm = Slurm(Launch(launcher="slurm", nodes=2), folder, executor=SecondNodeTwice())
    run_all([t], jobs=1, timeout=60, accept=lambda _: None, launcher=slurm)
    assert t.outcome.status == Status.FAILED and t.outcome.placement is not None and t.outcome.placement.attempts == 2
    assert (
        t.outcome.placement.host == "node-1,node-2"
        and t.outcome.placement.node == "n1,n2"
        and "started 2 times" in (t.outcome.error or "")
    )


def test_a_prerequisite_step_requeued_refuses_its_trajectory_before_the_command_runs(tmp_path):
    """The same rule broken another way: the job of the step before the command (a flat file's export) ran twice."""

    class FirstRequeued(Requeued):
        submitted = 0

        def submit(self, function, *args):
            self.submitted += 1
            return super().submit(function, *args) if self.submitted == 1 else Finished(function(*args))

    folder = tmp_path / "launches"
    folder.mkdir()
    never = tmp_path / "the command ran"
    argv = [sys.executable, "-c", f"open({str(never)!r}, 'w')"]
    t = Trajectory("fault-flat", argv, tmp_path / "o", tmp_path / "t.log", prepare=((sys.executable, "-c", "pass"),))
    run_all([t], jobs=1, timeout=60, accept=lambda _: None, launcher=Slurm(SLURM, folder, executor=FirstRequeued()))
    assert t.outcome.status == Status.FAILED and "started 2 times" in (t.outcome.error or "") and not never.exists()


def test_the_same_trajectory_started_once_is_accepted(tmp_path):
    """The negative control of the refusal: one start, the same fake scheduler's answer otherwise."""

    class Once(Requeued):
        def submit(self, function, *args):
            return Finished(function(*args))

    folder = tmp_path / "launches"
    folder.mkdir()
    t = Trajectory("continuous", [sys.executable, "-c", "pass"], tmp_path / "o", tmp_path / "t.log")
    run_all([t], jobs=1, timeout=60, accept=lambda _: None, launcher=Slurm(SLURM, folder, executor=Once()))
    assert t.outcome.status == Status.DONE and t.outcome.placement is not None and t.outcome.placement.attempts == 1


def test_a_job_that_never_starts_within_the_timeout_is_cancelled_with_the_schedulers_word(tmp_path):
    scheduler = NeverStarts()
    slurm = Slurm(SLURM, tmp_path, executor=scheduler)
    with pytest.raises(LaunchError, match=r"^job 7 never started within --timeout 0.3 s: state PENDING"):
        slurm.launch(["true"], tmp_path / "t.log", 0.3, None)
    assert scheduler.job.cancelled


def test_a_job_sent_sigterm_ends_its_command_and_every_start_is_counted(tmp_path):
    """What scancel does (submitit itself only logs a SIGTERM): the job's command, in its own session, ends too."""
    pid, starts = tmp_path / "pid", tmp_path / "starts"
    argv = [sys.executable, "-c", SLEEPER, str(pid)]
    args = f"{argv!r}, {str(tmp_path / 't.log')!r}, None, {str(starts)!r}"
    body = f"from resumeproof.verify.run.launch import job; job.run({args})"
    the_job = subprocess.Popen([sys.executable, "-c", body])
    assert wait_until(pid.exists)
    the_job.send_signal(signal.SIGTERM)
    assert the_job.wait(timeout=60) != 0
    assert wait_until(lambda: gone(pid))
    assert len(job.started(str(starts))) == 1


def test_a_machine_without_slurm_is_one_line_naming_the_launcher(tmp_path, monkeypatch):
    monkeypatch.delenv(SUBMITIT_CLUSTER_ENV, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # no srun, no sbatch
    with pytest.raises(LaunchError, match=r'^--launcher slurm: no Slurm cluster to submit to from here: .*"srun"'):
        Slurm(SLURM, tmp_path / "launches")


def test_a_job_that_started_and_did_not_finish_within_the_timeout_is_cancelled(tmp_path):
    """The timeout broken the other way: the job started (its start is counted), and runs on."""

    class StartsAndHangs(NeverStarts):
        def submit(self, function, *args):
            Path(args[-1]).write_text("node-3\t0\tn3\n")  # what job.run writes first, on the node
            return self.job

    scheduler = StartsAndHangs()
    slurm = Slurm(SLURM, tmp_path, executor=scheduler)
    with pytest.raises(LaunchError, match=r"^job 7 timed out after 0.3 s and was cancelled$"):
        slurm.launch(["true"], tmp_path / "t.log", 0.3, None)
    assert scheduler.job.cancelled


def test_a_missing_submitit_names_the_extra_to_install(monkeypatch):
    monkeypatch.setattr("importlib.util.find_spec", lambda name: None)
    assert launch.missing_submitit() == f"--launcher slurm needs submitit, the 'cluster' extra: {launch.INSTALL}"


def test_the_command_refuses_slurm_without_submitit_before_anything_runs(tmp_path, monkeypatch):
    monkeypatch.setattr("importlib.util.find_spec", lambda name: None)
    result = CliRunner().invoke(cli.main, ["verify", "--output", str(tmp_path / "out"), "--launcher", "slurm"])
    assert result.exit_code == 2 and "needs submitit, the 'cluster' extra" in result.output
    assert not (tmp_path / "out").exists()


@pytest.fixture
def real_jobs(slurm_cluster, tmp_path, monkeypatch) -> Slurm:
    """The Slurm launcher submitting to the real two-node cluster."""
    monkeypatch.delenv(SUBMITIT_CLUSTER_ENV, raising=False)
    for name, value in slurm_cluster.env.items():
        monkeypatch.setenv(name, value)
    return Slurm(SLURM, tmp_path / "launches")


def test_a_real_job_runs_once_and_records_slurms_node(real_jobs, tmp_path):
    ran = real_jobs.launch([sys.executable, "-c", "print('ran')"], tmp_path / "t.log", 120, None)
    assert ran.exit_code == 0 and (tmp_path / "t.log").read_text() == "ran\n"
    where = ran.placement
    assert where.launcher == "slurm" and where.job_id is not None and where.job_id.isdigit()
    assert where.attempts == 1 and where.host == socket.gethostname() and where.node in NODES


def test_a_real_two_node_job_meets_at_the_first_nodes_address_not_its_name(slurm_cluster, real_jobs, tmp_path):
    """The nodes' names (n1, n2) resolve nowhere: torchrun's rendezvous gets the first node's NodeAddr."""
    names = ("PET_NNODES", "PET_NODE_RANK", "PET_MASTER_ADDR", "SLURMD_NODENAME")
    show = f"import os; print(*[os.environ.get(k) for k in {names!r}])"
    two = Slurm(Launch(launcher="slurm", nodes=2), tmp_path / "launches")
    ran = two.launch([sys.executable, "-c", show], tmp_path / "t.log", 120, None)
    assert ran.exit_code == 0
    assert sorted((tmp_path / "t.log").read_text().splitlines()) == ["2 0 127.0.0.1 n1", "2 1 127.0.0.1 n2"]
    assert ran.placement.node == "n1,n2" and ran.placement.attempts == 1


def test_a_first_node_whose_address_does_not_resolve_is_one_line_and_runs_nothing(tmp_path, monkeypatch):
    """Where neither scontrol nor the resolver knows the first node, the task says so in the log and starts nothing,
    instead of every rank waiting out torchrun's rendezvous."""

    class Unresolvable:
        hostnames = ("node-that-resolves-nowhere.invalid", "n2")
        hostname, num_tasks, global_rank, raw_job_id = "n2", 2, 1, "42"

    monkeypatch.setattr("submitit.JobEnvironment", Unresolvable)
    monkeypatch.setenv("PATH", str(tmp_path))  # no scontrol
    log, starts, never = tmp_path / "t.log", tmp_path / "starts", tmp_path / "ran"
    code = every_node([sys.executable, "-c", f"open({str(never)!r}, 'w')"], str(log), None, str(starts))
    said = "--slurm-nodes 2: the first node's address 'node-that-resolves-nowhere.invalid' (node "
    assert code == job.CANNOT_START and log.read_text().startswith(said) and len(log.read_text().splitlines()) == 1
    assert not never.exists() and job.started(node_starts(str(starts), 1)) == []


def test_slurm_itself_refuses_to_requeue_a_trajectorys_job(slurm_cluster, real_jobs, tmp_path):
    """`sbatch --no-requeue` holds on a real scheduler: `scontrol requeue` (what a preemption with PreemptMode=REQUEUE
    does) is refused for the running job, which then ends once, as it was planned."""
    pid = tmp_path / "pid"
    ran: list = []
    code = "import os, sys, time; open(sys.argv[1], 'w').write(os.environ['SLURM_JOB_ID']); time.sleep(3)"
    sleeper = [sys.executable, "-c", code, str(pid)]
    runner = threading.Thread(target=lambda: ran.append(real_jobs.launch(sleeper, tmp_path / "t.log", 120, None)))
    runner.start()
    assert wait_until(lambda: pid.exists() and pid.read_text() != "")
    job_id = pid.read_text()
    env = {**os.environ, **slurm_cluster.env}
    refused = subprocess.run(["scontrol", "requeue", job_id], env=env, capture_output=True, text=True)
    runner.join(timeout=120)
    assert refused.returncode != 0 and "disabled" in refused.stderr
    assert ran and ran[0].exit_code == 0 and ran[0].placement.attempts == 1


def test_a_job_that_ends_without_a_result_is_said_from_squeue_not_waited_for(slurm_cluster, real_jobs, tmp_path):
    """A cluster without accounting cannot answer sacct, through which submitit learns that a job ended: a job
    cancelled by someone else (an admin, a node failure) would be waited for until --timeout. squeue's state ends it."""
    runner, pid, errors = sleeping(real_jobs, tmp_path, STUBBORN)
    slurm_cluster.command("scancel", (tmp_path / "pid.job").read_text())
    runner.join(timeout=120)
    assert not runner.is_alive() and len(errors) == 1
    assert " ended CANCELLED without a result (its output: " in errors[0]
    assert wait_until(lambda: gone(pid))
