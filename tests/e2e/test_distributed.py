"""train.py under torchrun (gloo, CPU), verified end to end: the same trajectory at 1, 2 and 4 processes, exact
resumes on another number of processes (DDP, FSDP2, the canonical reduction), the rank-local faults, dead ranks,
tampered DCP metadata, the torchrun chaos test and two agents on one machine. Launches are few and shared by
fixtures.

The modules of kit/distributed/ are held here and in tests/e2e/test_launchers.py, end to end: world.py (the process
group), group.py and single.py (a run under torchrun, or without a launcher), parallel.py (the calls a loop makes,
the same for both), reduce.py and tree.py (the four reductions, the canonical one's fixed tree), state.py (the
standard layout as a DCP checkpoint), rundir.py (the run directory the ranks share). What they refuse without the
verifier is in tests/kit/distributed/."""

import json
import shlex
import shutil
import socket
import subprocess
import sys

import pytest

from resumeproof.common import dcp_check, protocol
from resumeproof.verify.judge.compare import compare_keys, merge
from resumeproof.verify.run import accept
from resumeproof.verify.run.trajectories import TrajectoryError
from tests.helpers import (
    LAUNCH_TIMEOUT,
    RAY_GROUP,
    REPO,
    TORCHRUN,
    TRAIN,
    TRAINERS,
    code_that_touches,
    command,
    identical,
    launch,
    read_verification,
    rewrite_metadata,
    run_verify,
    summary,
    torchrun,
)
from tests.launchers import through_ray, through_slurm

# Every verification of the world-size matrix runs each trajectory as a Ray job on the local head (issue 31: the same
# verdicts as local processes): the tests that read them on the worker that holds the Ray tests' cluster, so that each
# fixture is made once and one cluster serves them.
ON_RAY = pytest.mark.xdist_group(RAY_GROUP)


def compared(a: dict, b: dict):
    return merge(compare_keys(a, b, protocol.COMPARED_KEYS, 1e-12).values())


@pytest.fixture(scope="module")
def grow(tmp_path_factory, ray_cluster):
    """DDP: interrupted at 1 process, resumed at 2 (growing), with the two rank-local faults, and the two
    parts a DCP resume restores through set_state_dict rather than as a file checkpoint does."""
    faults = ("--faults", "other-ranks.data,other-ranks.rng,model,optimizer")
    return through_ray(
        tmp_path_factory, ray_cluster, "grow", "--train-cmd", command(1), "--resume-cmd", command(2), *faults
    )


@pytest.fixture(scope="module")
def pair(tmp_path_factory, ray_cluster):
    """DDP at 2 processes throughout, short, with the rank-local faults: the observer's records compared rank by
    rank (at the same number of processes)."""
    faults = ("--faults", "other-ranks.data,other-ranks.rng", "--steps", "4", "--interrupt-at", "2")
    return through_ray(tmp_path_factory, ray_cluster, "pair", "--train-cmd", command(2), *faults)


@pytest.fixture(scope="module")
def two_nodes(tmp_path_factory, slurm_cluster):
    """`pair` across two nodes of one process each: torchrun without --standalone, as a job of two nodes of a real
    Slurm (tests/slurm_cluster.py: both nodes on this machine, their names resolving nowhere) whose tasks each start it
    with the allocation's rendezvous."""
    one_per_node = shlex.join([*TORCHRUN, "--nproc-per-node", "1", str(TRAIN)])
    faults = ("--faults", "other-ranks.data,other-ranks.rng", "--steps", "4", "--interrupt-at", "2")
    args = ("--train-cmd", one_per_node, *faults, "--slurm-nodes", "2")
    return through_slurm(tmp_path_factory, "two-nodes", *args, cluster=slurm_cluster)


@pytest.fixture(scope="module")
def canonical(tmp_path_factory, ray_cluster):
    """The canonical reduction: interrupted at 2 processes, resumed at 4."""
    train, resume = command(2, "--reduction", "canonical"), command(4, "--reduction", "canonical")
    return through_ray(tmp_path_factory, ray_cluster, "canonical", "--train-cmd", train, "--resume-cmd", resume)


@pytest.fixture(scope="module")
def fsdp(tmp_path_factory, ray_cluster):
    """FSDP2: interrupted at 2 processes (sharded), resumed at 1 (resharded, shrinking)."""
    train, resume = command(2, "--reduction", "fsdp"), command(1, "--reduction", "fsdp")
    return through_ray(tmp_path_factory, ray_cluster, "fsdp", "--train-cmd", train, "--resume-cmd", resume)


@ON_RAY
def test_a_ddp_run_interrupted_at_1_process_resumes_exactly_at_2(grow):
    proc, doc, _ = grow
    assert proc.returncode == 0, proc.stderr
    assert doc["positive"] and doc["comparison"]["full_resume"]["verdict"] == "concordant"


@ON_RAY
def test_a_data_position_or_generators_restored_on_rank_0_only_are_caught_by_the_fault_matrix(grow):
    _, doc, _ = grow
    for part in ("other-ranks.data", "other-ranks.rng"):
        fault = doc["faults"][part]
        assert fault["detected"] and not fault["identical_to_full_resume"], part
        assert "history.loss" in fault["caught_by"], part  # rank 1 trained on other rows, other noise
    assert doc["blind_to"] == []


@ON_RAY
def test_a_part_lost_on_the_ranks_other_than_0_alone_is_named_from_their_first_resumed_update(pair):
    proc, doc, out = pair
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in (out / "observed").glob("fault-other-ranks.data.rank-*.json")) == [
        "fault-other-ranks.data.rank-0.json",
        "fault-other-ranks.data.rank-1.json",
    ]
    for part, said in (("other-ranks.data", "the batch differs"), ("other-ranks.rng", "not restored")):
        diagnosis = doc["faults"][part]["diagnosis"]
        assert (diagnosis["parts"], diagnosis["rule"], diagnosis["step"]) == ([part], "first-update", 3), part
        assert diagnosis["explanation"].startswith("rank 1: ") and said in diagnosis["explanation"], diagnosis


@ON_RAY
def test_a_two_node_slurm_job_runs_the_same_trajectories_as_two_processes_on_one_node(two_nodes, pair):
    """Each trajectory one job of two nodes, started once on each: the same runs bit for bit, the same verdicts and
    diagnoses as two processes on one node (`pair`, the same flags through Ray)."""
    proc, doc, out = two_nodes
    assert proc.returncode == 0, proc.stderr
    hosts = {t["ran_on"]["host"] for t in doc["trajectories"].values()}
    assert len(hosts) == 1 and len(hosts.pop().split(",")) == 2
    assert {t["ran_on"]["node"] for t in doc["trajectories"].values()} == {"n1,n2"}
    assert {t["ran_on"]["attempts"] for t in doc["trajectories"].values()} == {1}
    _, one_node, one_node_out = pair
    for name in ("continuous", "resumed", "fault-other-ranks.data"):
        assert identical(summary(out / name), summary(one_node_out / name)), name
    for part in ("other-ranks.data", "other-ranks.rng"):
        assert doc["faults"][part]["diagnosis"] == one_node["faults"][part]["diagnosis"], part
    assert doc["comparison"] == one_node["comparison"] and doc["positive"]


@ON_RAY
@pytest.mark.parametrize("part", ["model", "optimizer"])
def test_a_dcp_resume_that_omits_the_model_or_optimizer_really_leaves_it_unrestored(grow, part):
    """dcp.load writes in place: loading into the live parameters would restore an omitted model."""
    fault = grow[1]["faults"][part]
    # Caught, and not the full resume; naming the part is the diagnosis's (a lost model reads "unknown" there:
    # another loss at the same rows and lr could be a generator the summary does not report).
    assert fault["detected"] and not fault["identical_to_full_resume"]


@ON_RAY
def test_continuous_runs_at_1_2_and_4_processes_agree_and_1_is_the_single_process_run(
    grow, fsdp, continuous_run, tmp_path
):
    four = tmp_path / "w4"
    proc = torchrun(launch(4, "--steps", "10", "--output", str(four)))
    assert proc.returncode == 0, proc.stderr
    one, two = summary(grow[2] / "continuous"), summary(fsdp[2] / "continuous")  # DDP at 1, FSDP2 at 2
    assert identical(one, summary(continuous_run))  # torchrun at W=1 computes the single process's bits
    for other in (two, summary(four)):
        result = compared(one, other)
        assert result.concordant, result.mismatches[:3]
        assert result.max_abs_diff < 1e-14  # another order of summation: a few ulp


@ON_RAY
def test_the_canonical_reduction_is_bit_identical_at_1_2_and_4_processes_and_across_a_resume(canonical, tmp_path):
    proc, doc, out = canonical
    assert proc.returncode == 0, proc.stderr
    full = doc["comparison"]["full_resume"]
    assert full["verdict"] == "concordant" and full["max_deviation"] == 0.0 and full["max_state_deviation"] == 0.0
    two = summary(out / "continuous")
    for world, reduction in ((1, "canonical"), (2, "fsdp-canonical")):
        run = tmp_path / f"{reduction}-{world}"
        launched = torchrun(launch(world, "--steps", "10", "--output", str(run), "--reduction", reduction))
        assert launched.returncode == 0, launched.stderr
        assert identical(two, summary(run)), (world, reduction)


@ON_RAY
def test_an_fsdp2_run_interrupted_at_2_processes_resumes_resharded_at_1(fsdp):
    proc, doc, out = fsdp
    assert proc.returncode == 0, proc.stderr
    resume = command(1, "--reduction", "fsdp")
    assert doc["resume_cmd"] == resume and doc["comparison"]["full_resume"]["verdict"] == "concordant"
    kinds = {f["path"]: f["kind"] for f in doc["trajectories"]["interrupted"]["checkpoint_files"]}
    assert kinds == {".metadata": "dcp-metadata", "__0_0.distcp": "dcp-data", "__1_0.distcp": "dcp-data"}
    meta = summary(out / "continuous")["meta"], summary(out / "resumed")["meta"]
    shapes = [(m["world_size"], m["backend"], m["reduction"], len(m["workers"])) for m in meta]
    assert shapes == [(2, "gloo", "fsdp", 2), (1, "gloo", "fsdp", 1)]
    layout = dcp_check.read(out / "interrupted" / protocol.CHECKPOINT)
    files_of = {}
    for item in layout.items:
        files_of.setdefault(item.fqn, set()).add(item.file)
    assert files_of["model.hidden.weight"] == {"__0_0.distcp", "__1_0.distcp"}  # one shard per rank
    assert files_of["optim.hidden.weight.exp_avg"] == {"__0_0.distcp", "__1_0.distcp"}  # Adam's state too


def test_a_rank_killed_mid_run_fails_the_trajectory_within_seconds_naming_the_rank(tmp_path):
    # The timeout is generous (two launches on shared cores take about 10 s); a hang would take 600 s.
    dying = command(2, script=TRAINERS / "rank_dies.py")
    proc = run_verify("--output", tmp_path / "v", "--train-cmd", dying, timeout=120)
    assert proc.returncode == 2, proc.stderr
    error = read_verification(tmp_path / "v" / "verification.json")["error"]
    assert "rank 1 (local rank 1, pid" in error and "was killed by SIGKILL" in error, error


@ON_RAY
def test_a_tampered_metadata_is_refused_by_the_trainer_under_torchrun_and_never_runs(grow, tmp_path):
    marker = tmp_path / "ran"
    folder = tmp_path / "tampered" / protocol.CHECKPOINT
    shutil.copytree(grow[2] / "interrupted" / protocol.CHECKPOINT, folder)
    shutil.copy(grow[2] / "interrupted" / "checkpoint.pt.sha256", folder.parent)
    rewrite_metadata(folder, lambda m: m.storage_meta.modules.append(code_that_touches("os.system", marker)))
    proc = torchrun(launch(2, "--steps", "5", "--output", str(tmp_path / "r"), "--resume", str(folder)))
    assert proc.returncode != 0
    assert "names posix.system, outside the DCP allowlist; refusing to resume" in proc.stderr
    with pytest.raises(TrajectoryError, match=r"posix\.system"):
        accept.checkpoint(folder)
    assert not marker.exists() and not (tmp_path / "r").exists()


def test_a_short_torchrun_chaos_run_killing_ranks_loses_nothing(tmp_path):
    train = shlex.join([*TORCHRUN, "--standalone", "--nproc-per-node", "2", "--max-restarts", "4", str(TRAIN)])
    args = ("chaos", "--output", tmp_path / "c", "--kill", "rank", "--kills", "2", "--steps", "6", "--seed", "2")
    proc = run_verify(*args, "--train-cmd", train, timeout=2 * LAUNCH_TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((tmp_path / "c" / "verification.json").read_text())
    assert all(check["passed"] for check in doc["checks"]) and len(doc["kills"]) == 2
    assert all(k["signal"] == "SIGKILL" and k["rank"] in (0, 1) for k in doc["kills"])
    assert doc["trainer_starts"] == 3  # torchrun restarted the group after each kill


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


@ON_RAY
def test_two_torchrun_agents_with_a_c10d_rendezvous_resume_as_one_node(grow, tmp_path):
    two = tmp_path / "two-nodes"
    rendezvous = ("--rdzv-backend", "c10d", "--rdzv-endpoint", f"localhost:{free_port()}", "--rdzv-id", "two-nodes")
    nodes = ("--nnodes", "2", "--nproc-per-node", "1", *rendezvous, "--rdzv-conf", "join_timeout=120")
    agent = [*TORCHRUN, *nodes, "--max-restarts", "0", str(TRAIN), "--steps", "5", "--output", str(two)]
    agents = [subprocess.Popen(agent, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT) for _ in range(2)]
    outputs = [a.communicate(timeout=LAUNCH_TIMEOUT)[0].decode(errors="replace") for a in agents]
    assert [a.returncode for a in agents] == [0, 0], outputs
    assert summary(two)["meta"]["world_size"] == 2
    one = tmp_path / "one-node"
    proc = torchrun(launch(1, "--steps", "5", "--output", str(one), "--resume", str(two / protocol.CHECKPOINT)))
    assert proc.returncode == 0, proc.stderr
    result = compared(summary(grow[2] / "continuous"), summary(one))
    assert result.concordant, result.mismatches[:3]


@ON_RAY
@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--reduction", "canonical"), "--reduction needs a launcher"),
        (("--resume", "{dcp}", "--omit=other-ranks.data"), "--omit=other-ranks.data: a single process has no other"),
    ],
)
def test_without_a_launcher_what_needs_one_is_refused(fsdp, tmp_path, args, said):
    dcp_dir = str(fsdp[2] / "interrupted" / protocol.CHECKPOINT)
    argv = [sys.executable, "-B", str(TRAIN), "--steps", "1", "--output", str(tmp_path / "x")]
    proc = subprocess.run([*argv, *(a.format(dcp=dcp_dir) for a in args)], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 2 and said in proc.stderr, proc.stderr
    assert not (tmp_path / "x").exists()
