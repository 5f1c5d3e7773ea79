"""What a finished trajectory proved: a directory checkpoint (protocol revision 1.1) accepted with a sidecar that lists
every file, each file classified (verify/run/accept.py, as verify/run/admission.py decides; verify/run/outputs.py
records it); a DCP directory accepted only with the globals, items and bytes DCP writes, a tampered one refused unrun
(as the trainer refuses it: tests/kit/distributed/test_dcp_io.py).

Held elsewhere: a file checkpoint and a summary (verify/run/summary.py) end to end in tests/e2e/test_verify_e2e.py;
--torch-load's loader (verify/run/torch_load.py) in tests/verify/run/test_torch_load.py."""

import json
import subprocess

import pytest

from resumeproof.common import dcp_files, manifest, weights_only
from resumeproof.verify.run import accept
from resumeproof.verify.run.trajectories import TrajectoryError
from tests.helpers import DCP_TAMPERED, TRAINERS, dcp_saved, dcp_tampered, read_verification, run_verify

pytestmark = pytest.mark.xdist_group("directory_checkpoints")  # one worker: the module's runs are made once

TRAINER = f"python -B {TRAINERS / 'directory_checkpoint.py'}"
SMALL = ("--steps", "4", "--interrupt-at", "2")
ALLOW_RNG = ("--allow-unsafe-pickle", "rng.pkl")


def verify(tmp_path, *args):
    proc = run_verify("--output", tmp_path / "v", "--train-cmd", TRAINER, *SMALL, *args)
    report = tmp_path / "v" / "verification.json"
    return proc, read_verification(report) if report.is_file() else {}


@pytest.fixture(scope="module")
def passed(tmp_path_factory):
    return verify(tmp_path_factory.mktemp("dir"), *ALLOW_RNG)


def test_a_directory_checkpoint_passes_with_its_unsafe_pickle_allowed_by_name_and_recorded(passed):
    proc, doc = passed
    assert proc.returncode == 0, proc.stderr
    assert doc["allowed"] == {"unsafe_pickle": ["rng.pkl"], "opaque": []}
    files = {f["path"]: f for f in doc["trajectories"]["interrupted"]["checkpoint_files"]}
    kinds = {name: f["kind"] for name, f in files.items()}
    assert kinds == {
        "model.safetensors": "safetensors",
        "optimizer.pt": "torch",
        "scheduler.pt": "torch",
        "progress.json": "json",
        "notes.txt": "text",
        "rng.pkl": "pickle",
    }
    assert files["rng.pkl"]["allowed_by"] == "rng.pkl" and files["rng.pkl"]["globals"]
    assert all(f["allowed_by"] is None for name, f in files.items() if name != "rng.pkl")
    row = next(c for c in doc["checks"] if c["name"] == "checkpoint interrupted: fingerprint and weights_only")
    assert row["passed"] and "allowed explicitly: rng.pkl (pickle, by rng.pkl)" in row["detail"]


def test_the_sidecar_is_what_sha256sum_checks(passed):
    _, doc = passed
    run = doc["trajectories"]["interrupted"]["log"].rsplit("/logs/", 1)[0] + "/interrupted"
    checked = subprocess.run(
        ["sha256sum", "--check", "--strict", "checkpoint.pt.sha256"], cwd=run, capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.count(": OK") == 6


def test_an_unsafe_pickle_not_allowed_fails_naming_the_file_and_its_globals(tmp_path):
    proc, doc = verify(tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "rng.pkl: a pickle that can run code when loaded (it needs numpy" in doc["error"]
    assert "--allow-unsafe-pickle 'rng.pkl'" in doc["error"]


@pytest.mark.parametrize(
    ("variant", "said"),
    [
        ("extra-file", "stray.bin is not listed in checkpoint.pt.sha256"),
        # checked after every resume, before any other failure: the file the resume wrote is named
        ("writes-input", "interrupted/checkpoint.pt/notes.txt: changed while it was being resumed from"),
    ],
)
def test_a_file_beside_the_list_or_a_resume_that_writes_its_input_is_refused(tmp_path, variant, said):
    proc = run_verify("--output", tmp_path / "v", "--train-cmd", f"{TRAINER} --variant {variant}", *SMALL, *ALLOW_RNG)
    assert proc.returncode == 2, proc.stderr
    assert said in json.loads((tmp_path / "v" / "verification.json").read_text())["error"]


# -- DCP directories ------------------------------------------------------------------------------------------------


def test_a_dcp_save_names_only_allowlisted_globals_and_every_file_is_safe(tmp_path):
    folder = dcp_saved(tmp_path)
    assert set(weights_only.pickle_globals((folder / dcp_files.METADATA).read_bytes())) <= dcp_files.GLOBALS
    info = accept.checkpoint(folder)
    assert {f.path: f.kind for f in info.files} == {".metadata": "dcp-metadata", "__0_0.distcp": "dcp-data"}
    assert info.tensors == 5


@pytest.mark.parametrize("how", DCP_TAMPERED)
def test_a_dcp_directory_dcp_never_writes_is_refused_by_the_verifier_and_never_runs(tmp_path, how):
    """The trainer refuses it alike (tests/kit/distributed/test_dcp_io.py); only an explicit option would accept it."""
    folder, marker = dcp_tampered(tmp_path, how)
    with pytest.raises(TrajectoryError) as refused:
        accept.checkpoint(folder)
    reason, option = DCP_TAMPERED[how]
    assert reason in str(refused.value) and f"{option} '.metadata'" in str(refused.value)
    assert not marker.exists()


def test_bytes_that_no_item_describes_are_refused(tmp_path):
    folder = dcp_saved(tmp_path)
    with open(folder / "__0_0.distcp", "ab") as f:
        f.write(b"hidden")
    manifest.write(folder)
    with pytest.raises(TrajectoryError, match="items end at byte"):
        accept.checkpoint(folder)
