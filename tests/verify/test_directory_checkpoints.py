"""Directory checkpoints (protocol revision 1.1): a sidecar that lists every file, each file classified."""

import hashlib
import json
import struct
import subprocess

import pytest
import torch

from resumeproof.common import manifest
from resumeproof.common.allowances import NONE_ALLOWED, Allowances
from resumeproof.common.checkpoint_files import classify
from tests.helpers import TRAINERS, read_verification, run_verify

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
        "model.safetensors": "safetensors", "optimizer.pt": "torch", "scheduler.pt": "torch", "progress.json": "json",
        "notes.txt": "text", "rng.pkl": "pickle",
    }  # fmt: skip
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
        # the resume that wrote it, or the next one to read it, stops the verification
        ("writes-input", "interrupted/checkpoint.pt"),
    ],
)
def test_a_file_beside_the_list_or_a_resume_that_writes_its_input_is_refused(tmp_path, variant, said):
    proc = run_verify(
        "--output", tmp_path / "v", "--train-cmd", f"{TRAINER} --variant {variant}", *SMALL, *ALLOW_RNG
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert said in json.loads((tmp_path / "v" / "verification.json").read_text())["error"]


# -- the sidecar and the kinds, file by file ------------------------------------------------------


def folder_with(tmp_path, files: dict[str, bytes]):
    folder = tmp_path / "checkpoint.pt"
    for name, data in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    return folder


def test_manifest_lists_every_file_and_refuses_any_change(tmp_path):
    folder = folder_with(tmp_path, {"a.json": b"{}", "sub/b.txt": b"hello\n"})
    digest = manifest.write(folder)
    assert manifest.verify(folder)[0] == digest
    assert (tmp_path / "checkpoint.pt.sha256").read_text() == (
        f"{hashlib.sha256(b'{}').hexdigest()}  checkpoint.pt/a.json\n"
        f"{hashlib.sha256(b'hello' + bytes([10])).hexdigest()}  checkpoint.pt/sub/b.txt\n"
    )
    (folder / "sub" / "b.txt").write_bytes(b"hellO\n")
    with pytest.raises(manifest.ManifestError, match=r"sub/b\.txt: sha256"):
        manifest.verify(folder)
    (folder / "sub" / "b.txt").unlink()
    with pytest.raises(manifest.ManifestError, match=r"sub/b\.txt is missing"):
        manifest.verify(folder)


@pytest.mark.parametrize(
    "line",
    ["0" * 64 + "  checkpoint.pt/../escape", "0" * 64 + "  other/a.json", "0" * 63 + "  checkpoint.pt/a.json", "x"],
)
def test_a_sidecar_line_out_of_form_is_refused(tmp_path, line):
    folder = folder_with(tmp_path, {"a.json": b"{}"})
    (tmp_path / "checkpoint.pt.sha256").write_text(line + "\n")
    with pytest.raises(manifest.ManifestError, match="line 1"):
        manifest.verify(folder)


def safetensors_bytes() -> bytes:
    header = json.dumps({"w": {"dtype": "F64", "shape": [2], "data_offsets": [0, 16]}}).encode()
    return struct.pack("<Q", len(header)) + header + bytes(16)


@pytest.mark.parametrize(
    ("name", "make", "kind"),
    [
        ("w.safetensors", lambda path: path.write_bytes(safetensors_bytes()), "safetensors"),
        ("opt.pt", lambda path: torch.save({"lr": torch.ones(2)}, path), "torch"),
        ("rng.pt", lambda path: torch.save({"key": __import__("numpy").arange(3)}, path), "pickle"),
        ("state.json", lambda path: path.write_text('{"step": 3}'), "json"),
        ("latest", lambda path: path.write_text("checkpoint-3\n"), "text"),
        (
            "plain.pkl",
            lambda path: path.write_bytes(__import__("pickle").dumps({"a": [1, 2]}, protocol=4)),
            "plain-pickle",
        ),
        ("code.pkl", lambda path: path.write_bytes(__import__("pickle").dumps(print, protocol=4)), "pickle"),
        ("blob.bin", lambda path: path.write_bytes(bytes(range(256))), "opaque"),
    ],
)
def test_each_file_is_classified_by_its_bytes(tmp_path, name, make, kind):
    make(tmp_path / name)
    info = classify(tmp_path / name, name, "0" * 64, NONE_ALLOWED)
    assert info.kind == kind
    assert info.refused == (kind in ("pickle", "opaque"))
    if kind == "pickle":
        assert (
            info.globals and classify(tmp_path / name, name, "0" * 64, Allowances(unsafe_pickle=("*.p*",))).allowed_by
        )
