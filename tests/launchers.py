"""Verifications through a launcher, shared by the launchers' tests (tests/e2e/test_launcher_ray.py,
test_launcher_slurm.py, test_distributed.py): each trajectory checked to have run where it was sent, what a
verification concludes without where it ran, and the unmodified script they verify both ways."""

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from resumeproof.verify.run.launch import SUBMITIT_CLUSTER_ENV
from tests.helpers import TRAINERS, verification
from tests.slurm_cluster import Cluster

# An unmodified script verified through --observe, resumed from its own output folder
_LOOP = shlex.join([sys.executable, "-B", str(TRAINERS / "out_dir_loop.py"), str(TRAINERS / "out_dir_loop_config.py")])
OBSERVED_SCRIPT = (
    *("--observe", "--steps", "6", "--interrupt-at", "3", "--jobs", "2", "--resume-from-run"),
    *("--train-cmd", f"{_LOOP} --out_dir={{run}} --max_iters={{steps}}", "--checkpoint", "{run}/ckpt.pt"),
    *("--resume-cmd", f"{_LOOP} --out_dir={{run}} --max_iters={{steps}} --init_from=resume"),
)
Verified = tuple[subprocess.CompletedProcess, dict, Path]


def through_ray(tmp_path_factory, address: str, name: str, *args: str) -> Verified:
    """One verification whose trajectories are Ray jobs, each checked to have run as one."""
    return _ran_on("ray", *verification(tmp_path_factory, name, *args, "--launcher", "ray", "--ray-address", address))


def through_slurm(tmp_path_factory, name: str, *args: str, cluster: Cluster | None = None) -> Verified:
    """One verification whose trajectories are Slurm jobs, each checked to have run as one: on `cluster`, a real
    Slurm (tests/slurm_cluster.py), else run by submitit's local executor."""
    with pytest.MonkeyPatch.context() as env:
        env.delenv(SUBMITIT_CLUSTER_ENV, raising=False)
        if cluster is None:
            env.setenv(SUBMITIT_CLUSTER_ENV, "local")
        for variable, value in (cluster.env if cluster else {}).items():
            env.setenv(variable, value)
        verified = verification(tmp_path_factory, name, *args, "--launcher", "slurm")
    return _ran_on("slurm" if cluster else "slurm (submitit's local executor)", *verified)


def _ran_on(launcher: str, proc: subprocess.CompletedProcess, doc: dict, out: Path) -> Verified:
    assert {t["ran_on"]["launcher"] for t in doc.get("trajectories", {}).values()} == {launcher}, proc.stderr[-2000:]
    return proc, doc, out


def judged(doc: dict) -> dict:
    """What a verification concludes, without where or how long it ran."""
    return {
        "verdict": doc["verdict"],
        "checks": sorted((c["name"], c["passed"]) for c in doc["checks"]),
        "resumes": {name: r["verdict"] for name, r in doc["comparison"]["resumes"].items()},
        "no_rng": doc["comparison"]["no_rng_resume"]["verdict"],
        "faults": {part: (f["detected"], f["diagnosis"]) for part, f in doc["faults"].items()},
        "trajectories": sorted((name, t["status"], t["exit_code"]) for name, t in doc["trajectories"].items()),
    }
