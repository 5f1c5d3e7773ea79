"""Where a trajectory's processes run: the launcher a `Launch` asks for, and the seam's words (seam.py).

Every launcher runs one command line to its end with the trajectory's environment and log, and reports its exit code
with where it ran (`Placement`, recorded in verification.json). `local` (local.py) starts a process on this machine;
`slurm` (slurm.py) submits one Slurm job per command through submitit, imported only when asked for (docs/cluster.md).
"""

from pathlib import Path

from resumeproof.verify.run.launch.local import Local
from resumeproof.verify.run.launch.seam import (
    INSTALL,
    LAUNCHERS,
    LAUNCHES,
    LOCAL,
    LOCAL_LAUNCH,
    SLURM,
    SUBMITIT_CLUSTER_ENV,
    Launch,
    Launched,
    Launcher,
    LaunchError,
    Placement,
)

__all__ = [
    "INSTALL",
    "LAUNCHERS",
    "LAUNCHES",
    "LOCAL",
    "LOCAL_LAUNCH",
    "SLURM",
    "SUBMITIT_CLUSTER_ENV",
    "Launch",
    "LaunchError",
    "Launched",
    "Launcher",
    "Placement",
    "launcher_for",
    "missing_submitit",
]


def launcher_for(launch: Launch, folder: Path) -> Launcher:
    """The launcher `launch` asks for; a scheduler's files (submitit's pickles and logs) go under `folder`."""
    if launch.launcher == LOCAL:
        return Local()
    from resumeproof.verify.run.launch.slurm import Slurm

    return Slurm(launch, folder)


def missing_submitit() -> str | None:
    """Why --launcher slurm cannot run here (submitit is not installed), or None."""
    import importlib.util

    if importlib.util.find_spec("submitit") is None:
        return f"--launcher slurm needs submitit, the 'cluster' extra: {INSTALL}"
    return None
