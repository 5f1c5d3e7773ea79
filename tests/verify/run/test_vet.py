"""`resumeproof check`: a checkpoint someone sent, judged without torch and without running it; exit 0, 1 or 2."""

import json
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch

from resumeproof.common import manifest
from resumeproof.verify.run.vet import Verdict, vet
from tests.helpers import REPO, code_that_touches


def check(*args: object) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-B", "-m", "resumeproof", "check", *map(str, args)]
    return subprocess.run(argv, capture_output=True, text=True, cwd=REPO, timeout=60)


def test_a_trainers_checkpoint_is_accepted_with_its_sidecar_checked(interrupted_run):
    proc = check(interrupted_run / "checkpoint.pt")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().endswith("accepted: a torch archive, 18 tensors, sidecar matches")


@pytest.mark.parametrize("how", ["os.system", "exec"])
def test_a_checkpoint_that_runs_code_is_refused_and_never_runs(tmp_path, how):
    marker, path = tmp_path / "MARKER", tmp_path / "sent.pt"
    torch.save({"w": torch.ones(2), "x": code_that_touches(how, marker)}, path)
    proc = check(path)
    assert proc.returncode == 1 and "refused" in proc.stderr and len(proc.stderr.splitlines()) == 1
    assert not marker.exists()


def test_a_quantized_tensor_is_refused_and_the_reason_says_the_refusal_is_deliberate(tmp_path):
    path = tmp_path / "q.pt"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # quantized tensors are deprecated in torch 2.13
        torch.save(torch.quantize_per_tensor(torch.ones(2), 0.1, 0, torch.qint8), path)
    found = vet(path)
    assert found.verdict is Verdict.REFUSED and "quantized tensor, refused deliberately" in (found.reason or "")


def test_a_sidecar_that_does_not_match_is_a_refusal(interrupted_run, tmp_path):
    path = tmp_path / "checkpoint.pt"
    path.write_bytes((interrupted_run / "checkpoint.pt").read_bytes())
    (tmp_path / "checkpoint.pt.sha256").write_text(f"{'0' * 64}  checkpoint.pt\n")
    proc = check(path)
    assert proc.returncode == 1 and "does not match" in proc.stderr


def test_a_missing_path_is_exit_2_and_the_worst_verdict_decides(interrupted_run, tmp_path):
    proc = check(interrupted_run / "checkpoint.pt", tmp_path / "nothing.pt")
    assert proc.returncode == 2 and "nothing.pt: unreadable: no such file or directory" in proc.stderr
    assert check().returncode == 2  # no path: a usage error


def dcp_directory(folder: Path) -> Path:
    from torch.distributed.checkpoint import FileSystemWriter, save

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # no process group: DCP saves as one process, and says so
        save({"model": {"w": torch.arange(6.0)}}, storage_writer=FileSystemWriter(folder))
    return folder


@pytest.mark.parametrize("signed", [True, False], ids=["with-sidecar", "bare"])
def test_a_dcp_directory_is_accepted_with_or_without_a_sidecar(tmp_path, signed):
    folder = dcp_directory(tmp_path / "ckpt")
    if signed:
        manifest.write(folder)
    found = vet(folder)
    assert found.verdict is Verdict.ACCEPTED and found.sidecar is signed
    assert {f.kind for f in found.files} == {"dcp-metadata", "dcp-data"}


def test_a_framework_directory_with_a_pickle_that_can_run_code_is_refused_unless_allowed_by_name(tmp_path):
    folder = tmp_path / "checkpoint-4"
    folder.mkdir()
    torch.save({"w": torch.ones(2)}, folder / "model.pt")
    (folder / "rng_state.pth").write_bytes(__import__("pickle").dumps({"state": __import__("random").getstate}))
    proc = check(folder, "--json")
    assert proc.returncode == 1
    document = json.loads(proc.stdout)
    entry = document["paths"][0]
    assert (
        document["accepted"] is False and entry["verdict"] == "refused" and "--allow-unsafe-pickle" in entry["reason"]
    )
    allowed = check(folder, "--allow-unsafe-pickle", "rng_state.pth")
    assert allowed.returncode == 0, allowed.stderr


def test_a_symbolic_link_inside_a_directory_is_refused(tmp_path, interrupted_run):
    folder = tmp_path / "d"
    folder.mkdir()
    (folder / "model.pt").symlink_to(interrupted_run / "checkpoint.pt")
    assert vet(folder).verdict is Verdict.REFUSED
