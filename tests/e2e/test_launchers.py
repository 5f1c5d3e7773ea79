"""Resume across launchers: a DCP checkpoint written under torchrun resumed by one plain process, a single process's
checkpoint file resumed under torchrun (FSDP2 sharding its full tensors), and what stays refused. Two verifications,
shared by fixtures, verified end to end; docs/distributed.md."""

import shlex
import shutil
import subprocess
import sys

import pytest

from resumeproof.common import dcp_check, protocol
from tests.helpers import (
    REPO,
    TRAIN,
    code_that_touches,
    command,
    launch,
    rewrite_metadata,
    summary,
    torchrun,
    verification,
)

# The tests that read one verification on one worker, so that it is made once; the two spread over both workers.
TO_ONE, FROM_ONE = pytest.mark.xdist_group("launchers-to-one"), pytest.mark.xdist_group("launchers-from-one")

PLAIN = shlex.join([sys.executable, "-B", str(TRAIN)])  # one process, no launcher
DCP_KINDS = {".metadata": "dcp-metadata", "__0_0.distcp": "dcp-data", "__1_0.distcp": "dcp-data"}


def files(doc: dict, trajectory: str) -> dict[str, str]:
    """The kinds of a trajectory's checkpoint files; empty for a checkpoint file (not a directory)."""
    return {f["path"]: f["kind"] for f in doc["trajectories"][trajectory]["checkpoint_files"]}


@pytest.fixture(scope="module")
def to_one(tmp_path_factory):
    """Interrupted under torchrun at 2 processes (canonical), every resume one plain process; the model and
    optimizer faults prove that both come back from the DCP directory."""
    train = command(2, "--reduction", "canonical")
    faults = ("--faults", "model,optimizer")
    return verification(tmp_path_factory, "to-one", "--train-cmd", train, "--resume-cmd", PLAIN, *faults)


@pytest.fixture(scope="module")
def from_one(tmp_path_factory):
    """Interrupted by one plain process, resumed under torchrun at 2 processes, FSDP2-sharded (fsdp-canonical)."""
    resume = command(2, "--reduction", "fsdp-canonical")
    return verification(tmp_path_factory, "from-one", "--train-cmd", PLAIN, "--resume-cmd", resume)


@TO_ONE
def test_a_dcp_checkpoint_written_at_2_processes_resumes_in_one_plain_process(to_one):
    proc, doc, out = to_one
    assert proc.returncode == 0, proc.stderr
    full = doc["comparison"]["full_resume"]
    assert full["verdict"] == "concordant" and full["max_deviation"] < 1e-14  # a few ulp: per-row sums vs a batch
    assert files(doc, "interrupted") == DCP_KINDS and files(doc, "resumed") == {}  # it went on writing a file
    resumed = summary(out / "resumed")["meta"]
    assert "world_size" not in resumed and resumed["resumed_from"] == str(out / "interrupted" / protocol.CHECKPOINT)
    for part in ("model", "optimizer"):
        assert doc["faults"][part]["detected"], part


@FROM_ONE
def test_a_single_process_checkpoint_resumes_under_torchrun_sharded_by_fsdp2(from_one):
    proc, doc, out = from_one
    assert proc.returncode == 0, proc.stderr
    full = doc["comparison"]["full_resume"]
    assert full["verdict"] == "concordant" and full["max_deviation"] < 1e-14
    assert files(doc, "interrupted") == {} and files(doc, "resumed") == DCP_KINDS
    meta = summary(out / "resumed")["meta"]
    assert (meta["world_size"], meta["reduction"]) == (2, "fsdp-canonical")
    written = dcp_check.read(out / "resumed" / protocol.CHECKPOINT)
    shards = {item.file for item in written.items if item.fqn == "optim.hidden.weight.exp_avg"}
    assert shards == {"__0_0.distcp", "__1_0.distcp"}  # Adam's moments went back sharded, one shard per rank


@pytest.mark.parametrize("launcher", [pytest.param("plain", marks=TO_ONE), pytest.param("torchrun", marks=FROM_ONE)])
def test_resuming_in_place_a_run_directory_another_launcher_wrote_is_refused_untouched(request, tmp_path, launcher):
    """--resume auto replaces checkpoint.pt and the generations by name: a file cannot replace a DCP directory."""
    if launcher == "plain":
        written_by, argv = request.getfixturevalue("to_one")[2], [sys.executable, "-B", str(TRAIN)]
    else:
        written_by, argv = request.getfixturevalue("from_one")[2], launch(1)
    run = tmp_path / "run"
    shutil.copytree(written_by / "interrupted", run)
    before = sorted(p.name for p in run.iterdir())
    proc = torchrun([*argv, "--steps", "6", "--output", str(run), "--resume", "auto"])
    other = "under torchrun (a DCP directory)" if launcher == "plain" else "by one process (a file)"
    said = f"{run / protocol.CHECKPOINT} was written {other}; a run directory resumes in place under the launcher"
    assert proc.returncode != 0 and said in proc.stderr, proc.stderr[-2000:]
    assert sorted(p.name for p in run.iterdir()) == before


@FROM_ONE
def test_a_checkpoint_file_that_does_not_match_its_sidecar_is_refused_by_every_rank(from_one, tmp_path):
    source = tmp_path / "tampered" / protocol.CHECKPOINT
    shutil.copytree(from_one[2] / "interrupted", source.parent)
    data = bytearray(source.read_bytes())
    data[-100] ^= 1
    source.write_bytes(bytes(data))
    proc = torchrun(launch(2, "--steps", "5", "--output", str(tmp_path / "r"), "--resume", str(source)))
    assert proc.returncode != 0
    for rank in (0, 1):
        assert f"train.py [rank {rank}]: error: {source}: sha256 " in proc.stderr, proc.stderr[-2000:]
    assert "does not match checkpoint.pt.sha256" in proc.stderr and not (tmp_path / "r").exists()


@TO_ONE
def test_a_tampered_dcp_metadata_is_refused_by_a_plain_process_and_never_runs(to_one, tmp_path):
    """One process reads `.metadata` through the same safe reader as a rank: checked, then unpickled allowlisted."""
    marker = tmp_path / "ran"
    folder = tmp_path / "tampered" / protocol.CHECKPOINT
    shutil.copytree(to_one[2] / "interrupted", folder.parent)
    rewrite_metadata(folder, lambda m: m.storage_meta.modules.append(code_that_touches("os.system", marker)))
    argv = [sys.executable, "-B", str(TRAIN), "--steps", "5", "--output", str(tmp_path / "r"), "--resume", str(folder)]
    proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 2, proc.stderr
    assert "names posix.system, outside the DCP allowlist; refusing to resume" in proc.stderr
    assert not marker.exists() and not (tmp_path / "r").exists()
