"""Fixtures shared by the whole suite: one trained checkpoint reused by many tests, a Ray cluster, a Slurm cluster."""

import os
import shutil
import signal
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import slurm_cluster as slurm
from tests.helpers import free_ports, trained


@pytest.fixture(scope="session")
def interrupted_run(tmp_path_factory) -> Path:
    """A train.py run of 5 steps (mid-epoch): its directory holds checkpoint.pt, .sha256, summary.json."""
    return trained(tmp_path_factory, "interrupted", 5)


@pytest.fixture(scope="session")
def continuous_run(tmp_path_factory) -> Path:
    """A train.py run of 10 steps: across the epoch boundary at 6."""
    return trained(tmp_path_factory, "continuous", 10)


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[str]:
    """A real Ray cluster on this machine (a head of 2 CPUs, no GPU, the dashboard the Jobs API needs): its dashboard's
    address. One per worker that asks for it: the Ray tests share one xdist group ("ray"). Started with `ray start
    --block` in its own session, so that the end of the session ends this cluster (its process group), not another's
    (`ray stop` would stop every cluster of the user)."""
    from ray.job_submission import JobSubmissionClient

    ports = free_ports(5)
    gcs, dashboard, agent, client, metrics = ports
    # Ray's unix sockets lie under its temp dir and a socket's path has at most 107 bytes: under an xdist worker's
    # base temp (.../pytest-N/popen-gw0/ray0/session_<date>_<pid>/sockets/...) it is too long: the head never comes up
    temp = Path(tempfile.mkdtemp(prefix="rp-ray-"))
    argv = ["ray", "start", "--head", "--block", "--port", str(gcs), "--dashboard-port", str(dashboard)]
    argv += ["--dashboard-agent-listen-port", str(agent), "--ray-client-server-port", str(client)]
    argv += ["--metrics-export-port", str(metrics), "--num-cpus", "2", "--num-gpus", "0", "--include-dashboard=true"]
    argv += ["--object-store-memory", str(100 * 2**20), "--disable-usage-stats", "--temp-dir", str(temp)]
    with open(temp / "ray-start.log", "wb") as log:
        env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
        head = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=env)
        address = f"http://127.0.0.1:{dashboard}"
        try:
            waited = threading.Event()
            for _ in range(240):  # up to a minute: about 9 s on 2 idle cores
                assert head.poll() is None, (temp / "ray-start.log").read_text()
                try:
                    JobSubmissionClient(address).list_jobs()
                    break
                except (OSError, RuntimeError, ValueError):
                    waited.wait(0.25)
            else:
                pytest.fail(f"no Ray cluster at {address} within a minute: {(temp / 'ray-start.log').read_text()}")
            yield address
        finally:
            for signum in (signal.SIGTERM, signal.SIGKILL):
                try:
                    os.killpg(head.pid, signum)
                    head.wait(timeout=5)  # `ray start --block` can take 30 s to end on SIGTERM: then SIGKILL
                    break
                except ProcessLookupError:
                    break
                except subprocess.TimeoutExpired:
                    continue
            shutil.rmtree(temp, ignore_errors=True)  # the cluster's own files, this fixture's only


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory) -> Iterator[slurm.Cluster]:
    """A real Slurm cluster of two nodes on this machine (tests/slurm_cluster.py), Debian's packages installed where
    they are missing. One per worker that asks for it: the real-Slurm tests share one xdist group ("slurm"). Where
    it cannot run (not root), the tests are skipped here and fail in CI, where a skip would prove nothing."""
    why = slurm.why_not()
    if why is not None:
        if os.environ.get("CI"):
            pytest.fail(f"no Slurm cluster in CI: {why}")
        pytest.skip(f"no Slurm cluster here: {why}")
    slurm.install(Path(tempfile.gettempdir()) / "resumeproof-slurm-install.lock")
    # Short: munge's socket path must fit in 107 bytes
    cluster = slurm.start(Path(tempfile.mkdtemp(prefix="rp-slurm-")))
    try:
        yield cluster
    finally:
        slurm.stop(cluster)
        shutil.rmtree(cluster.folder, ignore_errors=True)
