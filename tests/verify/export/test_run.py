"""`resumeproof export RUN DEST` end to end (verify/export/run.py, through the command): to S3 (moto's server on
localhost) and to a local folder, proven, with EXPORT.json valid against docs/export.schema.json and PROOF.md;
an export killed mid-copy leaves the earlier one current and usable, and the next one clears what it left; a copy
corrupted on the way, or a resume that writes into the copy, fails (exit 1) and replaces nothing; a bad input is
one line and exit 2, with nothing written. Signed (--sign-key): an export to S3 whose model.sig the OpenSSF tool
verifies over the files downloaded from the bucket; a bad key refused before DEST is touched; a file that appears
in the export's folder once it is signed fails the `signature` check, and CURRENT stays."""

import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import fsspec
import jsonschema
import pytest
from click.testing import CliRunner

from resumeproof.cli import main
from resumeproof.common import fingerprint
from resumeproof.common.protocol import SUMMARY
from resumeproof.verify.export import run as export_run
from resumeproof.verify.export import signature, source, transfer
from resumeproof.verify.export.result import Copied
from resumeproof.verify.export.store import open_store
from resumeproof.verify.export.transfer import CURRENT, EXPORT_JSON, EXPORTS, PROOF_MD
from resumeproof.verify.run.vet import Verdict, vet
from tests.helpers import REPO, TRAINERS
from tests.verify.export.conftest import PASSWORD, new_bucket

pytestmark = pytest.mark.xdist_group("export")  # the folder's fixtures (conftest.py) are made once

SCHEMA = json.loads((REPO / "docs" / "export.schema.json").read_text())
MODEL_SIGNING = Path(sys.executable).parent / "model_signing"  # the OpenSSF tool, as installed beside Python
NO_TORCH = "import sys; sys.modules['torch'] = None\nfrom resumeproof.cli import main\nmain()\n"  # no import of torch


def export(*args: object):
    return CliRunner().invoke(main, ["export", *map(str, args)], prog_name="resumeproof")


def current(dest: str) -> tuple[str | None, dict]:
    """The id CURRENT names at DEST, and that export's EXPORT.json (checked against the schema)."""
    store = open_store(dest, REPO / "runs")
    ident = transfer.current(store)
    document = json.loads(store.read_text(f"{EXPORTS}/{ident}/{EXPORT_JSON}") or "{}")
    jsonschema.validate(document, SCHEMA)
    return ident, document


def intact(dest: str, ident: str, into) -> list[str]:
    """What differs between an export at DEST and its EXPORT.json, after `resumeproof check` on each point."""
    store = open_store(dest, REPO / "runs")
    document = json.loads(store.read_text(f"{EXPORTS}/{ident}/{EXPORT_JSON}") or "{}")
    copied = [Copied(**f) for f in document["files"]]
    root, check = transfer.read_back(store, f"{EXPORTS}/{ident}", copied, into)
    refused = [p["path"] for p in document["points"] if vet(root / p["path"]).verdict is not Verdict.ACCEPTED]
    return ([] if check.passed else [check.detail or ""]) + refused


@pytest.fixture(scope="module")
def first(run_dir, aws):
    """run_dir exported to S3: the command's result and DEST (the kill test, after the others, replaces it)."""
    dest = new_bucket() + "/runs/a"
    return export(run_dir, dest), dest


def test_an_export_to_s3_is_proven_and_current_names_it(first, run_dir):
    result, dest = first
    assert result.exit_code == 0, result.output
    ident, document = current(dest)
    said = f"exported step 3 to {dest}/exports/{ident}/: proven (CURRENT names it; PROOF.md)"
    assert result.stderr.splitlines()[-1] == said
    assert document["proven"] and document["step"] == 3 and document["id"] == ident
    assert [(c["kind"], c["passed"]) for c in document["checks"]] == [
        ("copy", True), ("checkpoint", True), ("restorable", True),
    ]  # fmt: skip
    assert [f["path"] for f in document["files"]] == ["checkpoint.pt", "checkpoint.pt.sha256", "loss.jsonl", SUMMARY]
    assert document["trainer"]["from"] == "summary.json meta.argv"
    assert document["recorded"]["identity"] == json.loads((run_dir / SUMMARY).read_text())["meta"]["identity"]


def test_proof_md_says_the_command_the_step_every_check_the_versions_and_how_to_load_it(first, run_dir):
    _, dest = first
    ident, document = current(dest)
    proof = open_store(dest, REPO / "runs").read_text(f"{EXPORTS}/{ident}/{PROOF_MD}") or ""
    assert proof.startswith("# Export of step 3: proven\n")
    assert f"- Command: `resumeproof export {run_dir} {dest}`" in proof
    assert "- Step found: 3, `checkpoint.pt`" in proof
    assert all(f"| {c['name']} | passed |" in proof for c in document["checks"])
    assert "torch 2.13.0" in proof and "data_sha256" in proof
    assert 'torch.load("checkpoint.pt", map_location="cpu", weights_only=True)' in proof


def test_a_killed_export_leaves_the_earlier_one_current_and_usable_and_the_next_one_clears_it(first, run_dir, tmp_path):
    _, dest = first
    before, _ = current(dest)
    run = shutil.copytree(run_dir, tmp_path / "run")
    (run / "notes.bin").write_bytes(os.urandom(16 << 20))  # copied after loss.jsonl: the kill lands inside it
    argv = [sys.executable, "-B", "-m", "resumeproof", "export", str(run), dest]
    env = {**os.environ, "TMPDIR": str(tmp_path)}  # what a SIGKILL leaves of the work folder stays here
    proc = subprocess.Popen(argv, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    fs, root = fsspec.url_to_fs(dest)

    def copying() -> bool:  # the new export's loss.jsonl is there: notes.bin is on its way
        fs.invalidate_cache()
        return any(p.endswith("/loss.jsonl") and before not in p for p in fs.find(root))

    killed = _kill_when(proc, copying)
    assert killed, "the export ended before it could be killed mid-copy"
    fs.invalidate_cache()
    partial = [p for p in fs.ls(f"{root}/{EXPORTS}", detail=False) if not p.endswith(before)]
    assert len(partial) == 1 and not fs.exists(f"{partial[0]}/{SUMMARY}")  # it died copying notes.bin
    assert current(dest)[0] == before and intact(dest, before, tmp_path / "back") == []

    again = [sys.executable, "-B", "-c", NO_TORCH, "export", run, dest, "--all"]
    proc = subprocess.run(again, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr  # the verifier's side runs with torch unimportable
    after, document = current(dest)
    assert after != before and document["replaces"] == before
    points = ["checkpoint.pt", "step_000003.pt", "step_000002.pt", "step_000001.pt"]
    assert [p["path"] for p in document["points"]] == points
    fs.invalidate_cache()
    assert fs.ls(f"{root}/{EXPORTS}", detail=False) == [f"{root}/{EXPORTS}/{after}"]  # the earlier and the partial


def _kill_when(proc: subprocess.Popen, ready, timeout: float = 120) -> bool:
    deadline = time.monotonic() + timeout
    while proc.poll() is None and time.monotonic() < deadline:
        if ready():
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            return True
        time.sleep(0.01)
    return False


def test_a_verifications_point_exported_to_a_folder_checks_with_sha256sum(verification_dir, tmp_path):
    dest = tmp_path / "dest"
    result = export(verification_dir, dest)
    assert result.exit_code == 0, result.output
    ident, document = current(str(dest))
    assert document["source"]["kind"] == "verification" and document["step"] == 2
    assert (
        document["checks"][-1]["name"]
        == "one update resumed from the copy equals the continuous run's next update, bit for bit"
    )
    assert sorted(p.name for p in dest.iterdir()) == [CURRENT, EXPORTS]
    check = subprocess.run(["sha256sum", "-c", CURRENT], cwd=dest, capture_output=True, text=True)
    assert check.returncode == 0 and check.stdout == f"exports/{ident}/EXPORT.json: OK\n"
    folder = dest / EXPORTS / ident
    assert all(fingerprint.sha256_file(folder / f["path"]) == f["sha256"] for f in document["files"])
    assert "(cd interrupted && sha256sum -c checkpoint.pt.sha256)" in (folder / PROOF_MD).read_text()


@pytest.mark.parametrize("damage", ["none", "no sidecar", "another sidecar"])
def test_check_on_the_copy_needs_the_sidecar_that_travelled_with_the_point(run_dir, tmp_path, damage):
    """The `checkpoint` check alone: in an export, `copy` has compared every byte before it runs."""
    copied = shutil.copytree(run_dir, tmp_path / "copy")
    sidecar = copied / "checkpoint.pt.sha256"
    if damage == "no sidecar":
        sidecar.unlink()
    elif damage == "another sidecar":
        sidecar.write_text((copied / "step_000001.pt.sha256").read_text().replace("step_000001.pt", "checkpoint.pt"))
    check = export_run._checked(copied, source.read(run_dir, everything=False).points[0])
    assert check.passed is (damage == "none"), check.detail
    said = {"none": "sidecar matches", "no sidecar": "but no sidecar", "another sidecar": "does not match"}[damage]
    assert check.detail is not None and said in check.detail


class Flipping:
    """A store whose writes of checkpoint.pt lose one bit on the way, as a faulty link or disk would."""

    def __init__(self, inner) -> None:
        self.inner = inner

    def __getattr__(self, name: str):
        return getattr(self.inner, name)

    def write(self, key, fill):
        if not key.endswith("/checkpoint.pt"):
            return self.inner.write(key, fill)
        buffer = io.BytesIO()
        fill(buffer)
        data = bytearray(buffer.getvalue())
        data[len(data) // 2] ^= 4
        return self.inner.write(key, lambda f: f.write(bytes(data)))


@pytest.fixture
def earlier(tmp_path):
    """A local DEST that holds an earlier export (made by hand, not proven by a run)."""
    store = open_store(str(tmp_path / "dest"), REPO / "runs")
    ident = "20260101T000000Z-step000001-abcdef"
    written = transfer.put(store, f"{EXPORTS}/{ident}", EXPORT_JSON, io.BytesIO(b"{}"))
    transfer.publish(store, ident, written)
    return tmp_path / "dest", ident


def test_a_copy_corrupted_on_the_way_fails_and_the_earlier_export_stays_current(run_dir, earlier, monkeypatch):
    dest, ident = earlier
    monkeypatch.setattr(export_run, "open_store", lambda typed, run: Flipping(open_store(typed, run)))
    result = export(run_dir, dest)
    assert result.exit_code == 1, result.output
    assert "FAILED every file read back from DEST has the size and sha256 sent: checkpoint.pt: 16" in result.stderr
    said = f"not exported: failed: every file read back from DEST has the size and sha256 sent; exports/{ident} stays"
    assert said in result.stderr
    store = open_store(str(dest), REPO / "runs")
    assert transfer.current(store) == ident
    failed = [name for name in store.children(EXPORTS) if name != ident]
    assert json.loads(store.read_text(f"{EXPORTS}/{failed[0]}/{EXPORT_JSON}") or "")["proven"] is False


def test_a_resume_that_writes_into_the_copy_fails_the_proof_and_its_logs_are_kept(
    verification_dir, tmp_path, monkeypatch
):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the work folder, kept here
    trainer = f"{sys.executable} -B {TRAINERS / 'rewrites_resume_input.py'}"
    result = export(verification_dir, tmp_path / "dest", "--train-cmd", trainer)
    assert result.exit_code == 1, result.output
    assert "the resume wrote into the copy: interrupted/checkpoint.pt:" in result.stderr
    logs = result.stderr.splitlines()[-1].removeprefix("logs of the resuming processes: ")
    assert [p.name for p in Path(logs).iterdir()] == ["from-copy.log"] and Path(logs).parent.parent == tmp_path
    assert transfer.current(open_store(str(tmp_path / "dest"), REPO / "runs")) is None


@pytest.mark.parametrize("bad", ["dest inside run", "no checkpoint", "no run", "unknown scheme"])
def test_a_bad_input_is_one_line_naming_it_and_writes_nothing(run_dir, tmp_path, bad):
    empty = tmp_path / "empty"
    empty.mkdir()
    run, dest = {
        "dest inside run": (run_dir, run_dir / "export"),
        "no checkpoint": (empty, tmp_path / "dest"),
        "no run": (tmp_path / "absent", tmp_path / "dest"),
        "unknown scheme": (run_dir, "foo://bucket/x"),
    }[bad]
    result = export(run, dest)
    said = {
        "dest inside run": f"DEST {dest}: inside RUN {run_dir}",
        "no checkpoint": f"RUN {empty}: no checkpoint",
        "no run": f"RUN {run}: no such directory",
        "unknown scheme": "DEST foo://bucket/x: cannot open: Protocol not known: foo",
    }[bad]
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and result.stderr.startswith(f"resumeproof export: error: {said}")
    assert not (run_dir / "export").exists() and not (tmp_path / "dest").exists()
    assert "Traceback" not in result.stderr


def test_an_unreachable_url_is_one_line_and_debug_shows_the_traceback(run_dir, aws):
    env = {**os.environ, "AWS_ENDPOINT_URL": "http://127.0.0.1:9", "AWS_MAX_ATTEMPTS": "1"}
    argv = [sys.executable, "-B", "-m", "resumeproof", "export", str(run_dir), "s3://bucket/x"]
    proc = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.startswith("python -m resumeproof export: error: DEST s3://bucket/x: cannot list DEST: ")
    assert proc.stderr.count("\n") == 1 and "Could not connect to the endpoint URL" in proc.stderr
    debug = export(run_dir, "foo://x", "--debug")
    assert debug.exit_code != 0 and type(debug.exception).__name__ == "StoreError"


def test_a_signed_export_to_s3_verifies_with_the_openssf_tool_over_the_files_downloaded(
    run_dir, bucket, keys, tmp_path
):
    dest = f"{bucket}/runs/signed"
    result = export(run_dir, dest, "--sign-key", keys.key, "--sign-password", PASSWORD)
    assert result.exit_code == 0, result.output
    ident, document = current(dest)
    signer = signature.trust(keys.public, ()).fingerprint
    assert document["signature"] == {"file": "model.sig", "signer": signer, "method": "key", "certificate": None}
    assert [(c["kind"], c["passed"]) for c in document["checks"]][-1] == ("signature", True)
    assert PASSWORD not in document["command"] and f"--sign-key {keys.key}" in document["command"]
    fs, root = fsspec.url_to_fs(f"{dest}/{EXPORTS}/{ident}")
    down = tmp_path / ident
    for key in fs.find(root):
        (down / key.removeprefix(f"{root}/")).parent.mkdir(parents=True, exist_ok=True)
        fs.get_file(key, str(down / key.removeprefix(f"{root}/")))
    assert sorted(p.name for p in down.iterdir()) == sorted(
        [*(f["path"] for f in document["files"]), EXPORT_JSON, PROOF_MD, "model.sig"]
    )
    argv = [MODEL_SIGNING, "verify", "key", down, "--signature", down / "model.sig", "--public_key", keys.public]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout == "Verification succeeded\n", proc.stdout + proc.stderr


@pytest.mark.parametrize("bad", ["missing", "wrong password", "a public key"])
def test_a_bad_sign_key_is_one_line_before_anything_is_copied(run_dir, keys, tmp_path, bad):
    given = {
        "missing": ("--sign-key", tmp_path / "absent.pem"),
        "wrong password": ("--sign-key", keys.key, "--sign-password", "wrong"),
        "a public key": ("--sign-key", keys.public),
    }[bad]
    result = export(run_dir, tmp_path / "dest", *given)
    said = {
        "missing": f"--sign-key {tmp_path}/absent.pem: cannot be read: No such file or directory",
        "wrong password": f"--sign-key {keys.key}: --sign-password does not decrypt it",
        "a public key": f"--sign-key {keys.public}: not a PEM private key",
    }[bad]
    assert result.exit_code == 2 and result.stderr == f"resumeproof export: error: {said}\n", result.output
    assert not (tmp_path / "dest").exists()


class Intruding:
    """A store where a file appears in the export's folder while its signature is sent: signed, then changed."""

    def __init__(self, inner) -> None:
        self.inner = inner

    def __getattr__(self, name: str):
        return getattr(self.inner, name)

    def write(self, key, fill):
        if key.endswith("/model.sig"):
            self.inner.write(key.replace("/model.sig", "/intruder.txt"), lambda f: f.write(b"not signed\n"))
        return self.inner.write(key, fill)


def test_a_file_added_once_the_export_is_signed_fails_the_signature_and_current_stays(
    run_dir, earlier, keys, monkeypatch
):
    dest, ident = earlier
    monkeypatch.setattr(export_run, "open_store", lambda typed, run: Intruding(open_store(typed, run)))
    result = export(run_dir, dest, "--sign-key", keys.other_key)
    assert result.exit_code == 1, result.output
    said = "FAILED model.sig (OpenSSF Model Signing) covers every file sent and verifies with the signer's key"
    assert f"{said}: added: intruder.txt" in result.stderr
    store = open_store(str(dest), REPO / "runs")
    assert transfer.current(store) == ident
    failed = [name for name in store.children(EXPORTS) if name != ident]
    document = json.loads(store.read_text(f"{EXPORTS}/{failed[0]}/{EXPORT_JSON}") or "")
    jsonschema.validate(document, SCHEMA)
    assert document["proven"] is False and document["checks"][-1]["detail"] == "added: intruder.txt"
    assert "# Export of step 3: NOT proven" in (store.read_text(f"{EXPORTS}/{failed[0]}/{PROOF_MD}") or "")
