"""Fixtures shared by the whole suite: one trained checkpoint reused by many tests, a Ray cluster, a Slurm cluster."""

import contextlib
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
from tests.helpers import RAY_GROUP, free_ports, trained

SLOW_FIXTURES = {"slurm_cluster", "ray_cluster"}  # a real cluster per worker
TESTS = Path(__file__).resolve().parent
# Whole verifications (tests/e2e), and the adapters' tests, each process of which imports its framework (Lightning,
# transformers: about 5 s each); the kit's plain adapter and the rest of the kit stay in the quick tier.
SLOW_FOLDERS = (TESTS / "e2e", TESTS / "kit" / "adapters")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The quick tier, `-m "not slow"` (README): what SLOW_FOLDERS hold and every test on a real cluster is `slow`,
    as is a test marked so itself; the rest still imports and runs every module."""
    for item in items:
        folder = any(slow in Path(item.path).parents for slow in SLOW_FOLDERS)
        if folder or SLOW_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def interrupted_run(tmp_path_factory) -> Path:
    """A train.py run of 5 steps (mid-epoch): its directory holds checkpoint.pt, .sha256, summary.json."""
    return trained(tmp_path_factory, "interrupted", 5)


@pytest.fixture(scope="session")
def continuous_run(tmp_path_factory) -> Path:
    """A train.py run of 10 steps: across the epoch boundary at 6."""
    return trained(tmp_path_factory, "continuous", 10)


class RayCluster:
    """A real Ray cluster of two nodes on this machine (a head and a second node, `ray start --address`, each of 1 CPU
    and no GPU, so that two jobs at once run one on each; the head has the dashboard the Jobs API needs). Each node is
    started with `ray start --block` in its own session, so that ending its process group ends this cluster, not
    another's (`ray stop` would stop every cluster of the user). Started again on the same ports once stopped."""

    def __init__(self) -> None:
        self.gcs, self.dashboard, self.agent, self.client, self.metrics, *self.second = free_ports(9)
        # Ray's unix sockets lie under its temp dir and a socket's path has at most 107 bytes: under an xdist worker's
        # base temp (.../pytest-N/popen-gw0/ray0/session_<date>_<pid>/sockets/...) it is too long: the head never
        # comes up
        self.temp = Path(tempfile.mkdtemp(prefix="rp-ray-"))
        self.address = f"http://127.0.0.1:{self.dashboard}"
        self.started: list[subprocess.Popen] = []

    def start(self) -> None:
        common = ["--block", "--num-cpus", "1", "--num-gpus", "0", "--object-store-memory", str(100 * 2**20)]
        common += ["--disable-usage-stats"]
        head = ["ray", "start", "--head", *common, "--port", str(self.gcs), "--dashboard-port", str(self.dashboard)]
        head += ["--dashboard-agent-listen-port", str(self.agent), "--ray-client-server-port", str(self.client)]
        head += ["--metrics-export-port", str(self.metrics), "--include-dashboard=true", "--temp-dir", str(self.temp)]
        node = ["ray", "start", "--address", f"127.0.0.1:{self.gcs}", *common]
        node += [
            "--dashboard-agent-listen-port",
            str(self.second[0]),
            "--dashboard-agent-grpc-port",
            str(self.second[1]),
        ]
        node += ["--metrics-export-port", str(self.second[2]), "--runtime-env-agent-port", str(self.second[3])]
        self.started.append(_ray_node(head, self.temp / "ray-head.log"))
        _until_ray(self.address, 1, self.started, self.temp)
        self.started.append(_ray_node(node, self.temp / "ray-node.log"))
        _until_ray(self.address, 2, self.started, self.temp)

    @property
    def running(self) -> bool:
        return bool(self.started)

    def stop(self) -> None:
        for process in reversed(self.started):
            _end_ray_node(process)
        self.started = []


RAY: list[RayCluster] = []  # this worker's cluster, once a test asked for one


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[str]:
    """The Ray cluster's dashboard address. One per worker that asks for it: the Ray tests share one xdist group
    ("ray"), and it ends once the next test needs none (`pytest_runtest_teardown`)."""
    cluster = RayCluster()
    RAY.append(cluster)
    try:
        cluster.start()
        yield cluster.address
    finally:
        cluster.stop()
        shutil.rmtree(cluster.temp, ignore_errors=True)  # the cluster's own files, this fixture's only


@pytest.fixture(autouse=True)
def _ray_running(request: pytest.FixtureRequest) -> None:
    """A test that needs the cluster after it was stopped finds it started again."""
    if RAY and "ray_cluster" in request.fixturenames and not RAY[0].running:
        RAY[0].start()


def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """Ray's daemons take about a seventh of a core while idle: the cluster ends once this worker is done with the
    Ray tests (their xdist group, which runs on it in one stretch), not at the end of the session."""
    if RAY and RAY[0].running and not (nextitem is not None and _on_ray(nextitem)):
        RAY[0].stop()


def _on_ray(item: pytest.Item) -> bool:
    groups = {marker.args[0] for marker in item.iter_markers("xdist_group") if marker.args}
    return "ray_cluster" in getattr(item, "fixturenames", ()) or RAY_GROUP in groups


def _ray_node(argv: list[str], log: Path) -> subprocess.Popen:
    with open(log, "wb") as out:
        env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
        return subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, env=env)


def _until_ray(address: str, nodes: int, started: list[subprocess.Popen], temp: Path) -> None:
    """Until the Jobs API answers with `nodes` nodes alive: up to a minute (about 9 s for the head on 2 idle cores)."""
    from ray.util.state import list_nodes
    from ray.util.state.exception import RayStateApiException

    waited = threading.Event()
    for _ in range(240):
        logs = "".join(log.read_text() for log in sorted(temp.glob("ray-*.log")))
        assert all(process.poll() is None for process in started), logs
        alive = 0
        with contextlib.suppress(OSError, RuntimeError, ValueError, RayStateApiException):  # not up yet: asked again
            alive = sum(n.state == "ALIVE" for n in list_nodes(address=address))
        if alive >= nodes:
            return
        waited.wait(0.25)
    pytest.fail(f"no Ray cluster of {nodes} nodes at {address} within a minute: {logs}")


def _end_ray_node(process: subprocess.Popen) -> None:
    for signum in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, signum)
            process.wait(timeout=5)  # `ray start --block` can take 30 s to end on SIGTERM: then SIGKILL
            return
        except ProcessLookupError:
            return
        except subprocess.TimeoutExpired:
            continue


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
