"""The Ray launcher against a real Ray cluster on this machine (the `ray_cluster` fixture: `ray start --head`): the exit
code, the log, the environment, a job that never starts, a lost cluster, stopping; a fake client only where a real
cluster cannot be made to misbehave (a retried entrypoint)."""

import os
import signal
import sys
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner
from ray.job_submission import JobStatus

from resumeproof import cli
from resumeproof.verify.run import launch
from resumeproof.verify.run.launch import Launch, LaunchError, job
from resumeproof.verify.run.launch.ray import Ray
from resumeproof.verify.run.trajectories import Trajectory, run_all
from resumeproof.verify.vocabulary.status import Status
from tests.helpers import RAY_GROUP, free_ports
from tests.verify.run.launch.test_slurm import SLEEPER, gone, wait_until

pytestmark = pytest.mark.xdist_group(RAY_GROUP)  # one worker, one cluster


@pytest.fixture
def ray(ray_cluster, tmp_path) -> Ray:
    return Ray(Launch(launcher="ray", ray_address=ray_cluster), tmp_path / "launches")


def test_a_job_runs_the_command_once_with_its_environment_into_its_log(ray, tmp_path, monkeypatch):
    """What the trajectory's environment sets travels (the runtime environment), what it removes is removed."""
    monkeypatch.setenv("REMOVED_BY_THE_TRAJECTORY", "x")
    env = {k: v for k, v in os.environ.items() if k != "REMOVED_BY_THE_TRAJECTORY"} | {"SEEN": "the observer's"}
    show = "import os; print([os.environ.get(k) for k in ('SEEN', 'REMOVED_BY_THE_TRAJECTORY')]); raise SystemExit(3)"
    log = tmp_path / "t.log"
    ran = ray.launch([sys.executable, "-c", show], log, 120, env)
    assert ran.exit_code == 3 and '["the observer\'s", None]' in log.read_text()
    where = ran.placement
    assert where.launcher == "ray" and where.attempts == 1 and where.host and where.job_id.startswith("raysubmit_")


def test_a_command_that_cannot_start_exits_127_and_says_why_in_its_log(ray, tmp_path):
    ran = ray.launch(["/no-such-command"], tmp_path / "t.log", 120, None)
    assert ran.exit_code == job.CANNOT_START and ran.placement.attempts == 1
    assert "cannot start '/no-such-command' on " in (tmp_path / "t.log").read_text()


def test_a_job_that_never_starts_is_stopped_after_the_timeout_with_rays_word(ray_cluster, tmp_path):
    """More GPUs than the cluster has (none): Ray keeps the job PENDING; the verifier stops it and quotes Ray."""
    asks = Ray(Launch(launcher="ray", ray_address=ray_cluster, gpus_per_job=1), tmp_path / "launches")
    with pytest.raises(
        LaunchError, match=r"^job (raysubmit_\w+) never started within --timeout 2 s: status PENDING: "
    ) as e:
        asks.launch(["true"], tmp_path / "t.log", 2, None)
    # Ray cannot stop a job it has not scheduled (the stop waits in its queue): it never ran, nothing of it started
    assert asks.client.get_job_status(str(e.value).split()[1]) == JobStatus.PENDING
    assert list((tmp_path / "launches").glob("*.starts")) == []


def test_a_lost_cluster_is_one_line_naming_the_address(tmp_path):
    (port,) = free_ports(1)
    with pytest.raises(LaunchError, match=rf"^--launcher ray: no Ray cluster at http://127.0.0.1:{port}: [^\n]+$"):
        Ray(Launch(launcher="ray", ray_address=f"http://127.0.0.1:{port}"), tmp_path)


def test_closing_the_launcher_stops_a_running_job_and_its_command(ray, tmp_path):
    pid, raised = tmp_path / "pid", []

    def launched() -> None:
        try:
            ray.launch([sys.executable, "-c", SLEEPER, str(pid)], tmp_path / "t.log", 600, None)
        except LaunchError as err:
            raised.append(str(err))

    thread = threading.Thread(target=launched)
    thread.start()
    assert wait_until(pid.exists, tries=1200)
    ray.close()
    thread.join()
    assert raised and (raised[0].endswith("stopped") or " ended STOPPED" in raised[0])
    assert wait_until(lambda: gone(pid))
    jobs = ray.client.list_jobs()
    assert [j.submission_id for j in jobs if j.status == JobStatus.RUNNING] == []


class Retried:
    """A Jobs API that ran the entrypoint twice (Ray does not retry an entrypoint; a future one, or a wrapper, might):
    the entrypoint itself runs twice, here, as a real process."""

    class Info:
        status, driver_exit_code, message, driver_node_id = None, 0, "", "node-a"

    def __init__(self, times: int) -> None:
        self.times, self.Info.status = times, JobStatus.SUCCEEDED

    def submit_job(self, *, entrypoint: str, runtime_env: dict, **_: object) -> str:
        import shlex
        import subprocess

        for _ in range(self.times):
            subprocess.run(shlex.split(entrypoint), env={**os.environ, **runtime_env["env_vars"]}, check=True)
        return "raysubmit_7"

    def get_job_info(self, sid: str) -> "Retried.Info":
        return self.Info()

    def stop_job(self, sid: str) -> bool:
        return False


@pytest.mark.parametrize("times, status", [(2, Status.FAILED), (1, Status.DONE)])
def test_a_trajectory_whose_command_started_twice_is_refused_and_once_accepted(tmp_path, times, status):
    t = Trajectory("continuous", [sys.executable, "-c", "pass"], tmp_path / "o", tmp_path / "t.log")
    ray = Ray(Launch(launcher="ray"), tmp_path / "launches", client=Retried(times))
    run_all([t], jobs=1, timeout=60, accept=lambda _: None, launcher=ray)
    assert t.outcome.status == status and t.outcome.placement is not None and t.outcome.placement.attempts == times
    assert ("started 2 times (job raysubmit_7: retried or requeued by the scheduler)" in (t.outcome.error or "")) == (
        times == 2
    )


@pytest.mark.parametrize(
    "flags, refused",
    [
        (["--ray-address", "http://head:8265"], "--ray-address"),
        (["--ray-gpus-per-job", "1"], "--ray-gpus-per-job"),
        (["--launcher", "slurm", "--ray-cpus-per-job", "2"], "--ray-cpus-per-job"),
        (["--launcher", "ray", "--slurm-nodes", "2"], "--slurm-nodes"),
    ],
)
def test_a_launchers_flags_are_refused_with_another_launcher(tmp_path, flags, refused):
    result = CliRunner().invoke(cli.main, ["verify", "--output", str(tmp_path / "out"), *flags])
    assert result.exit_code == 2 and f"{refused}: applies only with --launcher " in result.output
    assert not (tmp_path / "out").exists()


def test_the_command_refuses_ray_without_ray_before_anything_runs(tmp_path, monkeypatch):
    monkeypatch.setattr("importlib.util.find_spec", lambda name: None)
    assert launch.missing("ray") == f"--launcher ray needs ray, the 'cluster' extra: {launch.INSTALL}"
    result = CliRunner().invoke(cli.main, ["verify", "--output", str(tmp_path / "out"), "--launcher", "ray"])
    assert result.exit_code == 2 and "needs ray, the 'cluster' extra" in result.output
    assert not (tmp_path / "out").exists()


def test_job_py_runs_as_a_file_with_the_names_to_remove_before_the_command(tmp_path, monkeypatch):
    monkeypatch.setenv("GONE", "x")
    log, starts = tmp_path / "t.log", tmp_path / "starts"
    show = "import os; print(os.environ.get('GONE'))"
    before = signal.getsignal(signal.SIGTERM)
    assert job.main([str(log), str(starts), "GONE", "--", sys.executable, "-c", show]) == 0
    assert log.read_text() == "None\n" and len(job.started(str(starts))) == 1
    assert signal.getsignal(signal.SIGTERM) is before  # the job's SIGTERM handler is not left in the caller
    assert Path(job.__file__).read_text().count("import resumeproof") == 0  # the node needs no resumeproof
