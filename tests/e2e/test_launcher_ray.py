"""Verifications through `--launcher ray` against a real Ray cluster of two nodes on this machine (the `ray_cluster`
fixture: a head with the dashboard the Jobs API needs and a second node, 1 CPU each) give what `--launcher local`
gives: the reference trainer's fault matrix (every part omitted, each caught and named, its jobs on both nodes) and an
unmodified script through --observe (the world-size matrix through Ray: tests/e2e/test_distributed.py). One
verification per case and launcher, shared by the assertions; Ctrl-C, a lost cluster and a job that never starts."""

import pytest
from ray.job_submission import JobStatus, JobSubmissionClient
from ray.util.state import list_nodes

from resumeproof.common.protocol import STANDARD_PARTS
from tests.agreements import contradictions
from tests.helpers import RAY_GROUP, free_ports, run_verify, verification
from tests.interrupt import ctrl_c_during_two_trainers, running
from tests.launchers import OBSERVED_SCRIPT, judged, through_ray

pytestmark = pytest.mark.xdist_group(RAY_GROUP)  # one worker, one cluster

MATRIX = ("--faults", "all", "--jobs", "2")  # the reference trainer, every part it declares omitted in turn
SHORT = ("--steps", "6", "--interrupt-at", "3", "--jobs", "2")  # for the verifications that never run a trainer


@pytest.fixture(scope="module")
def reference(tmp_path_factory, ray_cluster):
    local = verification(tmp_path_factory, "local", *MATRIX)
    return local, through_ray(tmp_path_factory, ray_cluster, "ray", *MATRIX)


@pytest.fixture(scope="module")
def script(tmp_path_factory, ray_cluster):
    local = verification(tmp_path_factory, "script-local", *OBSERVED_SCRIPT)
    return local, through_ray(tmp_path_factory, ray_cluster, "script-ray", *OBSERVED_SCRIPT)


def test_ray_jobs_give_the_verdicts_and_diagnoses_of_local_processes(reference):
    (local_proc, local_doc, _), (ray_proc, ray_doc, _) = reference
    assert local_proc.returncode == 0, local_proc.stderr
    assert ray_proc.returncode == 0, ray_proc.stderr
    assert judged(ray_doc) == judged(local_doc)
    assert judged(ray_doc)["no_rng"] == "divergent"


def test_through_ray_every_omitted_part_is_caught_and_named(reference):
    _, (proc, doc, _) = reference
    assert list(doc["faults"]) == list(STANDARD_PARTS)  # what the trainer declares in one process (meta.parts)
    assert doc["parts"] == list(STANDARD_PARTS)
    for part, fault in doc["faults"].items():
        assert fault["detected"] is True, part
        assert fault["caught_by"] and fault["first_mismatch"], part
    caught = {part: set(fault["caught_by"]) for part, fault in doc["faults"].items()}
    assert "history.rows" in caught["data"]  # another permutation: other rows at step 6
    assert "history.lr" in caught["scheduler"]  # the lr drops at the wrong step
    assert {"step", "history"} <= caught["progress"]  # the counter restarts: wrong step, short history
    assert doc["blind_to"] == []
    assert "fault matrix" in proc.stderr and "all 8 faults caught" in proc.stderr
    # each named by its own part, the model too: in the files a lost model shows only in the loss, as an unreported
    # generator or buffer would; the observer saw the model's parameters differ entering the first resumed update
    named = {part: fault["diagnosis"]["lost"] for part, fault in doc["faults"].items()}
    assert named == {p: p for p in STANDARD_PARTS}
    assert doc["faults"]["model"]["diagnosis"]["rule"] == "first-update"
    assert not any(fault["identical_to_full_resume"] for fault in doc["faults"].values())
    assert contradictions(doc, faults_all=True) == []


def test_each_trajectory_records_the_ray_job_it_ran_as_once(reference, ray_cluster):
    _, (_, doc, _) = reference
    placed = [t["ran_on"] for t in doc["trajectories"].values()]
    assert placed and all(p["launcher"] == "ray" and p["attempts"] == 1 and p["host"] for p in placed)
    ids = {p["job_id"] for p in placed}
    assert len(ids) == len(placed)  # one job each, each known to the cluster as succeeded
    jobs = {j.submission_id: j.status for j in JobSubmissionClient(ray_cluster).list_jobs()}
    assert {jobs[i] for i in ids} == {JobStatus.SUCCEEDED}
    # Two nodes of one CPU each, two jobs at once: both nodes ran trajectories, each recorded by its node id
    assert {p["node"] for p in placed} == {n.node_id for n in list_nodes(address=ray_cluster)}


def test_an_unmodified_script_observed_through_ray_is_judged_as_locally(script):
    (local_proc, local_doc, _), (ray_proc, ray_doc, _) = script
    assert local_proc.returncode == 0, local_proc.stderr
    assert ray_proc.returncode == 0, ray_proc.stderr
    assert {t["ran_on"]["launcher"] for t in ray_doc["trajectories"].values()} == {"ray"}
    assert judged(ray_doc) == judged(local_doc)


def test_a_lost_cluster_is_exit_2_with_one_line_naming_the_address(tmp_path):
    (port,) = free_ports(1)
    address = f"http://127.0.0.1:{port}"
    proc = run_verify("--output", str(tmp_path / "v"), *SHORT, "--launcher", "ray", "--ray-address", address)
    said = [line for line in proc.stderr.splitlines() if address in line]
    assert proc.returncode == 2 and len(said) == 1 and f"no Ray cluster at {address}" in said[0], proc.stderr


def test_a_job_that_never_starts_is_exit_2_after_the_timeout_with_rays_word(tmp_path, ray_cluster):
    """One GPU asked of a cluster that has none: Ray keeps the job PENDING, and says why."""
    argv = ("--output", str(tmp_path / "v"), *SHORT, "--launcher", "ray", "--ray-address", ray_cluster)
    proc = run_verify(*argv, "--ray-gpus-per-job", "1", "--timeout", "3")
    assert proc.returncode == 2, proc.stderr
    assert "never started within --timeout 3 s: status PENDING: Job has not started yet" in proc.stderr


def test_ctrl_c_stops_every_job_and_leaves_nothing_running(tmp_path, ray_cluster):
    """Two jobs of a trainer that never ends (and a child it started), then Ctrl-C: no trainer, no child, no Ray job
    left running."""
    with ctrl_c_during_two_trainers(tmp_path / "run", "--launcher", "ray", "--ray-address", ray_cluster) as pids:
        assert len(pids) == 4 and [pid for pid in pids if running(pid)] == []
        jobs = JobSubmissionClient(ray_cluster).list_jobs()
        assert [j.submission_id for j in jobs if j.status == JobStatus.RUNNING] == []
