"""The words of the launcher seam: which launchers there are, what a launch asks for and what it reports."""

import re
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from resumeproof.common.errors import ResumeproofError

LOCAL, SLURM, RAY = "local", "slurm", "ray"
LAUNCHERS = (LOCAL, SLURM, RAY)
RAY_ADDRESS_ENV = "RAY_ADDRESS"  # Ray's own variable: the cluster --launcher ray submits to without --ray-address
SIGNAL, REQUEUE = "signal", "requeue"  # --preempt: the job's own --signal, or what PreemptMode=REQUEUE does
PREEMPTS = (SIGNAL, REQUEUE)
LAUNCHES = "launches"  # under --output: a scheduler's own files (submitit's pickles and logs) and each job's starts
INSTALL = "python -m pip install 'resumeproof[cluster]'"
# Test-only: "local" runs the same submitit jobs as processes on this machine (submitit's LocalExecutor).
SUBMITIT_CLUSTER_ENV = "RESUMEPROOF_SUBMITIT_CLUSTER"


class LaunchError(ResumeproofError):
    """A command could not be started, never started, or did not finish where it was sent."""


@dataclass(frozen=True)
class SlurmSignal:
    """--slurm-signal [B:]SIG[@LEAD], as sbatch's --signal reads it: the signal, the seconds before the time limit
    Slurm sends it (None: Slurm's default), and B: (to the batch shell only, which passes it on; else to the steps)."""

    name: str  # without SIG: 'USR1'
    lead: int | None = None
    batch: bool = False

    @classmethod
    def parse(cls, given: str) -> "SlurmSignal":
        """The signal `given` names; ValueError, in words, where sbatch or a process could not use it."""
        found = re.fullmatch(r"(B:)?(?:SIG)?([A-Z0-9]+)(?:@(\d+))?", given.strip().upper())
        name = found.group(2) if found else ""
        if not found or f"SIG{name}" not in signal.Signals.__members__ or name in ("KILL", "STOP"):
            raise ValueError(f"{given!r} is not [B:]SIG[@SECONDS] with a signal a process can catch (USR1, TERM, ...)")
        return cls(name, int(found.group(3)) if found.group(3) else None, bool(found.group(1)))

    @property
    def number(self) -> int:
        return int(signal.Signals[f"SIG{self.name}"])

    def __str__(self) -> str:
        """sbatch's spelling: B:USR1@90."""
        return f"{'B:' if self.batch else ''}{self.name}{'' if self.lead is None else f'@{self.lead}'}"


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
    preempt: str | None = None  # --preempt: SIGNAL or REQUEUE, one more trajectory that Slurm preempts (None: none)
    slurm_signal: SlurmSignal = SlurmSignal("USR1")  # --slurm-signal: the job's --signal, what --preempt signal sends


LOCAL_LAUNCH = Launch()


@dataclass(frozen=True)
class Preempt:
    """What --preempt asks of one trajectory: after update `at`, Slurm preempts its job `how` (SIGNAL: the job's
    `signal`, and the job must save and requeue itself; REQUEUE: `scontrol requeue`, SIGTERM then KillWait)."""

    how: str
    at: int
    signal: SlurmSignal = SlurmSignal("USR1")
    # A script's (--observe): the observer's record base, whose first start the observer holds right after update
    # `at` (observation.PAUSE) until released; None: a protocol trainer, followed by the updates its loss.jsonl logs.
    held: Path | None = None


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


@dataclass(frozen=True)
class Launched:
    """A command that ran to its end: its exit code and where it ran."""

    exit_code: int
    placement: Placement


class Launcher(Protocol):
    """Runs a command line to its end, its output appended to `log`; `close` ends whatever is still running."""

    def launch(self, argv: list[str], log: Path, timeout: float, env: dict[str, str] | None) -> Launched: ...

    def close(self) -> None: ...
