"""Where a trajectory's processes run: the launcher a `Launch` asks for, and the seam's words (seam.py).

Every launcher runs one command line to its end with the trajectory's environment and log, and reports its exit code
with where it ran (`Placement`, recorded in verification.json). `local` (local.py) starts a process on this machine;
`slurm` (slurm.py) submits one Slurm job per command through submitit, `ray` (ray.py) one Ray job through Ray's Jobs
API; each imported only when asked for (docs/cluster.md).
"""

from pathlib import Path

from resumeproof.verify.run.launch.local import Local
from resumeproof.verify.run.launch.seam import (
    INSTALL,
    LAUNCHERS,
    LAUNCHES,
    LOCAL,
    LOCAL_LAUNCH,
    PREEMPTS,
    RAY,
    RAY_ADDRESS_ENV,
    REQUEUE,
    SIGNAL,
    SLURM,
    SUBMITIT_CLUSTER_ENV,
    Launch,
    Launched,
    Launcher,
    LaunchError,
    Placement,
    Preempt,
    SlurmSignal,
)

__all__ = [
    "INSTALL",
    "LAUNCHERS",
    "LAUNCHES",
    "LOCAL",
    "LOCAL_LAUNCH",
    "PREEMPTS",
    "RAY",
    "RAY_ADDRESS_ENV",
    "REQUEUE",
    "SIGNAL",
    "SLURM",
    "SUBMITIT_CLUSTER_ENV",
    "Launch",
    "LaunchError",
    "Launched",
    "Launcher",
    "Placement",
    "Preempt",
    "SlurmSignal",
    "launcher_for",
    "missing",
    "missing_submitit",
]


def launcher_for(launch: Launch, folder: Path) -> Launcher:
    """The launcher `launch` asks for; a scheduler's files (submitit's pickles and logs) go under `folder`."""
    if launch.launcher == LOCAL:
        return Local()
    if launch.launcher == RAY:
        from resumeproof.verify.run.launch.ray import Ray

        return Ray(launch, folder)
    from resumeproof.verify.run.launch.slurm import Slurm

    return Slurm(launch, folder)


def missing_submitit() -> str | None:
    """Why --launcher slurm cannot run here (submitit is not installed), or None."""
    return missing(SLURM)


def missing(launcher: str) -> str | None:
    """Why `launcher` cannot run here (the package it submits through is not installed), or None."""
    import importlib.util

    package = {SLURM: "submitit", RAY: "ray"}.get(launcher)
    if package is not None and importlib.util.find_spec(package) is None:
        return f"--launcher {launcher} needs {package}, the 'cluster' extra: {INSTALL}"
    return None
