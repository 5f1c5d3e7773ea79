"""The reference trainer verified through `--launcher slurm` gives what `--launcher local` gives: each trajectory a
job of a real two-node Slurm on this machine (tests/slurm_cluster.py); the same for an unmodified script through
--observe (two nodes of a torchrun job: tests/e2e/test_distributed.py). Ctrl-C cancels every job, on the real
cluster (scancel) and on submitit's local executor (a SIGINT to each job's controller). One verification per
launcher and case, shared by the assertions."""

import os
import sys

import pytest

from resumeproof.verify.run.launch import SUBMITIT_CLUSTER_ENV
from tests.helpers import REPO, verification
from tests.interrupt import ctrl_c_during_two_trainers, running
from tests.launchers import OBSERVED_SCRIPT, judged, through_slurm
from tests.slurm_cluster import NODES

VERIFY = [sys.executable, "-B", str(REPO / "verify_resume.py")]

pytestmark = pytest.mark.xdist_group("launcher-slurm")  # one worker: the module's two runs are made once

ARGS = ("--steps", "6", "--interrupt-at", "3", "--faults", "model", "--jobs", "2")


@pytest.fixture(scope="module")
def local(tmp_path_factory):
    return verification(tmp_path_factory, "local", *ARGS)


@pytest.fixture(scope="module")
def slurm(tmp_path_factory, slurm_cluster):
    return through_slurm(tmp_path_factory, "slurm", *ARGS, cluster=slurm_cluster)


def test_slurm_jobs_give_the_verdicts_and_diagnoses_of_local_processes(local, slurm):
    (local_proc, local_doc, _), (slurm_proc, slurm_doc, _) = local, slurm
    assert local_proc.returncode == 0, local_proc.stderr
    assert slurm_proc.returncode == 0, slurm_proc.stderr
    assert judged(slurm_doc) == judged(local_doc)
    assert judged(local_doc)["faults"]["model"][0] and judged(local_doc)["no_rng"] == "divergent"  # caught, both


def test_each_trajectory_records_the_job_it_ran_as_once(slurm):
    _, doc, out = slurm
    placed = [t["ran_on"] for t in doc["trajectories"].values()]
    assert placed and all(p["launcher"] == "slurm" and p["attempts"] == 1 and p["node"] in NODES for p in placed)
    assert len({p["job_id"] for p in placed}) == len(placed)  # one job each
    assert all((out / "launches" / f"{p['job_id']}_submitted.pkl").is_file() for p in placed)


def test_an_unmodified_script_observed_through_slurm_is_judged_as_locally(tmp_path_factory, slurm_cluster):
    """The observer's records written by the jobs and read back: the verdicts of the same script run locally."""
    local_proc, local_doc, _ = verification(tmp_path_factory, "script-local", *OBSERVED_SCRIPT)
    slurm_proc, slurm_doc, _ = through_slurm(tmp_path_factory, "script-slurm", *OBSERVED_SCRIPT, cluster=slurm_cluster)
    assert local_proc.returncode == 0, local_proc.stderr
    assert slurm_proc.returncode == 0, slurm_proc.stderr
    assert judged(slurm_doc) == judged(local_doc)


def test_local_processes_record_no_job(local):
    _, doc, _ = local
    placed = [t["ran_on"] for t in doc["trajectories"].values()]
    assert placed and all(p["launcher"] == "local" and p["job_id"] is None and p["attempts"] == 1 for p in placed)


@pytest.mark.parametrize("cluster", ["real", "local executor"])
def test_ctrl_c_cancels_every_job_and_leaves_nothing_running(tmp_path, request, cluster):
    """Two jobs of a trainer that never ends (and a child it started), then Ctrl-C: no trainer, no child left."""
    if cluster == "real":
        env = {**os.environ, **request.getfixturevalue("slurm_cluster").env}
        env.pop(SUBMITIT_CLUSTER_ENV, None)
    else:
        env = {**os.environ, SUBMITIT_CLUSTER_ENV: "local"}
    with ctrl_c_during_two_trainers(tmp_path / "run", "--launcher", "slurm", env=env) as pids:
        assert len(pids) == 4 and [pid for pid in pids if running(pid)] == []
