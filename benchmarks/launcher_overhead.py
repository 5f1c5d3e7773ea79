"""Benchmark: what a launcher adds to a verification of the reference trainer: `--launcher local` against
`--launcher ray` (a Ray head started here, 2 CPUs, or --ray-address) and `--launcher slurm` through submitit's local
executor (RESUMEPROOF_SUBMITIT_CLUSTER=local).

    python -B -m benchmarks.launcher_overhead [--repeats 3] [--ray-address URL]

Each verification is `verify_resume.py --steps 6 --interrupt-at 3 --faults model --jobs 2` (five trajectories, a
critical path of three). Runs alternate so that drift in machine load hits every side alike; medians are reported,
and the seconds `ray start --head` took. This prints figures; it asserts nothing.
"""

import os
import signal
import socket
import statistics
import subprocess
import tempfile
import time

import click

from benchmarks.helpers import PY, timed

ARGS = ["--steps", "6", "--interrupt-at", "3", "--faults", "model", "--jobs", "2"]


def free_ports(count: int) -> list[int]:
    """`count` ports nothing listens on now (held together, so that they differ; as tests/conftest.py)."""
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


@click.command()
@click.option("--repeats", type=click.IntRange(min=1), default=3, show_default=True, help="Runs of each side.")
@click.option("--ray-address", metavar="URL", help="A running cluster's dashboard.  [default: a head started here]")
def main(repeats: int, ray_address: str | None) -> None:
    with tempfile.TemporaryDirectory(prefix="lo-") as tmp:
        head, started = None, 0.0
        if ray_address is None:
            head, ray_address, started = ray_head(f"{tmp}/ray")
        sides = {
            "local": (["--launcher", "local"], None),
            "ray": (["--launcher", "ray", "--ray-address", ray_address], None),
            "slurm (local executor)": (
                ["--launcher", "slurm"],
                {**os.environ, "RESUMEPROOF_SUBMITIT_CLUSTER": "local"},
            ),
        }
        times: dict[str, list[float]] = {name: [] for name in sides}
        try:
            for i in range(repeats):
                for n, (name, (flags, env)) in enumerate(sides.items()):
                    argv = [*PY, "verify_resume.py", "--output", f"{tmp}/v-{i}-{n}", *ARGS, *flags]
                    times[name].append(timed(argv, env))
        finally:
            if head is not None:
                os.killpg(head.pid, signal.SIGTERM)
                head.wait()
    if started:
        print(f"ray start --head (until its Jobs API answered)  {started:.2f} s")
    local = statistics.median(times["local"])
    for name, runs in times.items():
        median = statistics.median(runs)
        print(
            f"{name:24} median {median:.2f} s  (+{median - local:.2f} s)  runs: {', '.join(f'{t:.2f}' for t in runs)}"
        )


if __name__ == "__main__":
    main()
