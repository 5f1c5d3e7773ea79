"""Benchmark: what a launcher adds to a verification of the reference trainer: `--launcher local` against
`--launcher ray` (a Ray head started here, 2 CPUs, or --ray-address), `--launcher slurm` through submitit's local
executor (RESUMEPROOF_SUBMITIT_CLUSTER=local) and, with --slurm-conf, `--launcher slurm` on a real Slurm (the tests'
two-node cluster on this machine: `python -B -m tests.slurm_cluster start DIR` prints its slurm.conf; `... stop DIR`).

    python -B -m benchmarks.launcher_overhead [--repeats 3] [--ray-address URL] [--slurm-conf PATH [--two-nodes]]

Each verification is `verify_resume.py --steps 6 --interrupt-at 3 --faults model --jobs 2` (five trajectories, a
critical path of three). On a real Slurm it also times single jobs of a command that does nothing (submission to
the command's start, and to the job's result); with --two-nodes, the DDP pair of tests/e2e/test_distributed.py as
one job of two nodes against `torchrun --standalone --nproc-per-node 2` locally. Runs alternate so that drift in
machine load hits every side alike; medians are reported, and the seconds `ray start --head` and the cluster's start
took. This prints figures; it asserts nothing.
"""

import os
import shlex
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import click

from benchmarks.helpers import PY, timed

ARGS = ["--steps", "6", "--interrupt-at", "3", "--faults", "model", "--jobs", "2"]
PAIR = ["--steps", "4", "--interrupt-at", "2", "--faults", "other-ranks.data,other-ranks.rng"]
TORCHRUN = [sys.executable, "-m", "torch.distributed.run"]


def free_ports(count: int) -> list[int]:
    """`count` ports nothing listens on now (held together, so that they differ; as tests/helpers.py)."""
    held = [socket.socket() for _ in range(count)]
    for s in held:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in held]
    for s in held:
        s.close()
    return ports


def ray_head(temp: str) -> tuple[subprocess.Popen, str, float]:
    """A Ray head of 2 CPUs in its own session: the process, its dashboard's address, the seconds until it answered."""
    from ray.job_submission import JobSubmissionClient

    gcs, dashboard, agent, client, metrics = free_ports(5)
    argv = ["ray", "start", "--head", "--block", "--port", str(gcs), "--dashboard-port", str(dashboard)]
    argv += ["--dashboard-agent-listen-port", str(agent), "--ray-client-server-port", str(client)]
    argv += ["--metrics-export-port", str(metrics), "--num-cpus", "2", "--num-gpus", "0", "--include-dashboard=true"]
    argv += ["--object-store-memory", str(100 * 2**20), "--disable-usage-stats", "--temp-dir", temp]
    start, address = time.perf_counter(), f"http://127.0.0.1:{dashboard}"
    head = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    while True:
        try:
            JobSubmissionClient(address).list_jobs()
            return head, address, time.perf_counter() - start
        except (OSError, RuntimeError, ValueError):
            if head.poll() is not None or time.perf_counter() - start > 120:
                raise SystemExit(f"no Ray head at {address} (ray start exited {head.poll()})") from None
            time.sleep(0.25)


def slurm_jobs(conf: str, folder: Path, count: int) -> tuple[list[float], list[float]]:
    """Single jobs of a command that prints its start time, one after the other: seconds from the submission to the
    command's start, and to the job's result read back."""
    from resumeproof.verify.run.launch import Launch
    from resumeproof.verify.run.launch.slurm import Slurm

    os.environ["SLURM_CONF"] = conf
    launcher = Slurm(Launch(launcher="slurm"), folder / "launches")
    starts, ends = [], []
    for i in range(count):
        log = folder / f"job-{i}.log"
        submitted = time.time()
        launcher.launch([sys.executable, "-c", "import time; print(time.time())"], log, 300, None)
        ends.append(time.time() - submitted)
        starts.append(float(log.read_text()) - submitted)
    return starts, ends


@click.command()
@click.option("--repeats", type=click.IntRange(min=1), default=3, show_default=True, help="Runs of each side.")
@click.option("--ray-address", metavar="URL", help="A running cluster's dashboard.  [default: a head started here]")
@click.option("--slurm-conf", metavar="PATH", help="A running Slurm's slurm.conf: time its jobs too.")
@click.option("--two-nodes", is_flag=True, help="With --slurm-conf: a two-node torchrun job against a local pair.")
def main(repeats: int, ray_address: str | None, slurm_conf: str | None, two_nodes: bool) -> None:
    with tempfile.TemporaryDirectory(prefix="lo-") as tmp:
        head, started = None, 0.0
        if ray_address is None:
            head, ray_address, started = ray_head(f"{tmp}/ray")
        sides = {
            "local": (["--launcher", "local", *ARGS], None),
            "ray": (["--launcher", "ray", "--ray-address", ray_address, *ARGS], None),
            "slurm (local executor)": (
                ["--launcher", "slurm", *ARGS],
                {**os.environ, "RESUMEPROOF_SUBMITIT_CLUSTER": "local"},
            ),
        }
        jobs: tuple[list[float], list[float]] = ([], [])
        if slurm_conf is not None:
            real = {k: v for k, v in os.environ.items() if k != "RESUMEPROOF_SUBMITIT_CLUSTER"}
            real["SLURM_CONF"] = slurm_conf
            sides["slurm (real, 1 node)"] = (["--launcher", "slurm", *ARGS], real)
            if two_nodes:
                one = shlex.join([*TORCHRUN, "--nproc-per-node", "1", "train.py"])
                pair = shlex.join([*TORCHRUN, "--standalone", "--nproc-per-node", "2", "train.py"])
                sides["DDP pair, local"] = (["--train-cmd", pair, *PAIR], None)
                two = ["--launcher", "slurm", "--slurm-nodes", "2"]
                sides["DDP pair, 2 Slurm nodes"] = (["--train-cmd", one, *PAIR, *two], real)
        times: dict[str, list[float]] = {name: [] for name in sides}
        try:
            if slurm_conf is not None:
                jobs = slurm_jobs(slurm_conf, Path(tmp), 5)
            for i in range(repeats):
                for n, (name, (flags, env)) in enumerate(sides.items()):
                    argv = [*PY, "verify_resume.py", "--output", f"{tmp}/v-{i}-{n}", *flags]
                    times[name].append(timed(argv, env))
        finally:
            if head is not None:
                os.killpg(head.pid, signal.SIGTERM)
                head.wait()
    if started:
        print(f"ray start --head (until its Jobs API answered)  {started:.2f} s")
    for label, seconds in zip(("submission to the command's start", "submission to the result"), jobs, strict=True):
        if seconds:
            print(f"one Slurm job, {label}: median {statistics.median(seconds):.2f} s  runs: {_runs(seconds)}")
    baseline = {"DDP pair, 2 Slurm nodes": "DDP pair, local"}
    for name, runs in times.items():
        median, base = statistics.median(runs), statistics.median(times[baseline.get(name, "local")])
        print(f"{name:24} median {median:.2f} s  (+{median - base:.2f} s)  runs: {_runs(runs)}")


def _runs(seconds: list[float]) -> str:
    return ", ".join(f"{t:.2f}" for t in seconds)


if __name__ == "__main__":
    main()
