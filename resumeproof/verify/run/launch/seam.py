"""The words of the launcher seam: which launchers there are, what a launch asks for and what it reports."""

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from resumeproof.common.errors import ResumeproofError

LOCAL, SLURM, RAY = "local", "slurm", "ray"
LAUNCHERS = (LOCAL, SLURM, RAY)
RAY_ADDRESS_ENV = "RAY_ADDRESS"  # Ray's own variable: the cluster --launcher ray submits to without --ray-address
LAUNCHES = "launches"  # under --output: a scheduler's own files (submitit's pickles and logs) and each job's starts
INSTALL = "python -m pip install 'resumeproof[cluster]'"
# Test-only: "local" runs the same submitit jobs as processes on this machine (submitit's LocalExecutor).
SUBMITIT_CLUSTER_ENV = "RESUMEPROOF_SUBMITIT_CLUSTER"


class LaunchError(ResumeproofError):
    """A command could not be started, never started, or did not finish where it was sent."""


@dataclass(frozen=True, kw_only=True)
class Launch:
    """Where the trajectories run (--launcher, the --slurm-* and --ray-* flags; checked by verify/settings.py)."""

    launcher: str = LOCAL
    partition: str | None = None  # --slurm-partition (None: the cluster's default)
    nodes: int = 1  # --slurm-nodes: above 1, the command runs once per node with torchrun's rendezvous
    gpus_per_node: int = 0  # --slurm-gpus-per-node
    minutes: int | None = None  # --slurm-time: each job's time limit (None: the partition's default)
    ray_address: str | None = None  # --ray-address: the cluster's dashboard (None: RAY_ADDRESS, or Ray's default)
    cpus_per_job: float = 1  # --ray-cpus-per-job: entrypoint_num_cpus (how many jobs a node runs at once)
    gpus_per_job: float = 0  # --ray-gpus-per-job: entrypoint_num_gpus


LOCAL_LAUNCH = Launch()


@dataclass(frozen=True, kw_only=True)
class Placement:
    """What ran where: the launcher, the host, the scheduler's job id, how many times it started, its devices."""

    launcher: str
    host: str | None  # None: it never started
    job_id: str | None  # None: no scheduler (local)
    attempts: int  # starts of the command: more than one is a retry or a requeue, refused
    devices: str | None  # CUDA_VISIBLE_DEVICES as the command saw it (None: not set)
    # The scheduler's name of the node(s): Slurm's (SLURMD_NODENAME, joined by commas), Ray's node id; None: local
    node: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "launcher": self.launcher,
            "host": self.host,
            "job_id": self.job_id,
            "attempts": self.attempts,
            "devices": self.devices,
            "node": self.node,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any] | None) -> "Placement | None":
        return cls(**d) if d else None


@dataclass(frozen=True)
class Launched:
    """A command that ran to its end: its exit code and where it ran."""

    exit_code: int
    placement: Placement


class Launcher(Protocol):
    """Runs a command line to its end, its output appended to `log`; `close` ends whatever is still running."""

    def launch(self, argv: list[str], log: Path, timeout: float, env: dict[str, str] | None) -> Launched: ...

    def close(self) -> None: ...
