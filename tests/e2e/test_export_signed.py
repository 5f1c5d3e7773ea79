"""A signed export end to end, as a user runs it: `resumeproof export RUN DEST --sign-key KEY.pem` (and the offline
certificate form, --sign-cert with --sign-chain) in a fresh process whose verifier side cannot import torch; then
the OpenSSF tool itself, unmodified and run as a process (`model_signing verify key|certificate`), accepts the
export's folder, and refuses it, as `resumeproof check --public-key` (--cert-chain) does, after each kind of
tampering: a changed byte in the checkpoint, the checkpoint replaced with its fingerprint rewritten to match,
EXPORT.json or PROOF.md edited, a file added, another key (another CA). Two exports in all; each tampering works
on a copy of one."""

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner
from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat, load_pem_public_key

from resumeproof.cli import main
from resumeproof.common import fingerprint
from resumeproof.verify.export import transfer
from resumeproof.verify.export.store import open_store
from resumeproof.verify.export.transfer import EXPORT_JSON, EXPORTS, PROOF_MD
from resumeproof.verify.run.vet import Verdict, vet
from tests.helpers import REPO
from tests.verify.export.conftest import PASSWORD, Keys, make_keys, make_run

pytestmark = pytest.mark.xdist_group("export-signed")  # its module fixtures (two exports) are made once

MODEL_SIGNING = Path(sys.executable).parent / "model_signing"  # the OpenSSF tool, as installed beside Python
NO_TORCH = "import sys; sys.modules['torch'] = None\nfrom resumeproof.cli import main\nmain()\n"  # no import of torch
SCHEMA = json.loads((REPO / "docs" / "export.schema.json").read_text())
FORMS = ("key", "certificate")
CHAIN_REFUSED = "its certificate does not chain to the certificates given"


def signing(form: str, k: Keys) -> list[str]:
    """The export's signing options; the key form's password comes from the environment."""
    if form == "key":
        return ["--sign-key", str(k.key)]
    return ["--sign-key", str(k.leaf_key), "--sign-cert", str(k.leaf), "--sign-chain", str(k.chain)]


def tool(form: str, folder: Path, k: Keys, other: bool = False) -> subprocess.CompletedProcess:
    """`model_signing verify key|certificate FOLDER --signature FOLDER/model.sig` with the signer's public key or CA
    (or another)."""
    if form == "key":
        trusted = ["--public_key", str(k.other_public if other else k.public)]
    else:
        trusted = ["--certificate_chain", str(k.other_chain if other else k.chain)]
    argv = [MODEL_SIGNING, "verify", form, folder, "--signature", folder / "model.sig", *trusted]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120)


def check(form: str, folder: Path, k: Keys, other: bool = False):
    if form == "key":
        trusted = ["--public-key", str(k.other_public if other else k.public)]
    else:
        trusted = ["--cert-chain", str(k.other_chain if other else k.chain)]
    return CliRunner().invoke(main, ["check", str(folder), *trusted], prog_name="resumeproof")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    """The export's tests' run (tests/verify/export/conftest.py): three steps, a generation after each."""
    return make_run(tmp_path_factory.mktemp("export") / "run")


@pytest.fixture(scope="module")
def keys(tmp_path_factory) -> Keys:
    return make_keys(tmp_path_factory.mktemp("keys"))


@pytest.fixture(scope="module")
def signed(run_dir, keys, tmp_path_factory) -> dict[str, Path]:
    """RUN exported twice, signed with the key and with the certificate: each export's folder."""
    found = {}
    for form in FORMS:
        dest = tmp_path_factory.mktemp(f"signed-{form}") / "dest"
        argv = [sys.executable, "-B", "-c", NO_TORCH, "export", str(run_dir), str(dest), *signing(form, keys)]
        env = {**os.environ, "RESUMEPROOF_SIGN_PASSWORD": PASSWORD}
        proc = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr
        found[form] = dest / EXPORTS / str(transfer.current(open_store(str(dest), REPO / "runs")))
    return found


@pytest.mark.parametrize("form", FORMS)
def test_the_openssf_tool_accepts_a_signed_export_and_check_names_its_signer(signed, keys, form):
    folder = signed[form]
    proc = tool(form, folder, keys)
    assert proc.returncode == 0 and proc.stdout == "Verification succeeded\n", proc.stdout + proc.stderr
    document = json.loads((folder / EXPORT_JSON).read_text())
    jsonschema.validate(document, SCHEMA)
    assert [c["kind"] for c in document["checks"]] == ["copy", "checkpoint", "restorable", "signature"]
    assert document["proven"] and document["signature"]["method"] == form
    result = check(form, folder, keys)
    assert result.exit_code == 0, result.output
    by = document["signature"]["signer"] + (", certificate CN=resumeproof exporter" if form == "certificate" else "")
    assert result.stdout == f"{folder}: signature verified: signed by {by}, over its 6 files\n"
    public = keys.public if form == "key" else keys.leaf
    assert document["signature"]["signer"] == _fingerprint(public)


@pytest.mark.parametrize("form", FORMS)
def test_the_command_proof_md_gives_verifies_the_export_in_its_folder(signed, keys, form):
    proof = (signed[form] / PROOF_MD).read_text()
    line = next(line for line in proof.splitlines() if line.startswith("model_signing verify"))
    argv = shlex.split(line.split("   #")[0].replace("PUB.pem", str(keys.public)).replace("CHAIN.pem", str(keys.chain)))
    proc = subprocess.run([MODEL_SIGNING, *argv[1:]], cwd=signed[form], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout == "Verification succeeded\n", proc.stdout + proc.stderr


def _fingerprint(pem: Path) -> str:
    """sha256:<hex> of the DER SubjectPublicKeyInfo of a public key or a certificate's key, as `openssl pkey -pubin
    -outform DER | sha256sum` gives it."""
    data = pem.read_bytes()
    key = x509.load_pem_x509_certificate(data).public_key() if b"CERTIFICATE" in data else load_pem_public_key(data)
    return f"sha256:{hashlib.sha256(key.public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo)).hexdigest()}"


def _flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 1
    path.write_bytes(bytes(data))


def _replace_checkpoint(folder: Path, run: Path) -> None:
    """Another point's checkpoint in its place, its fingerprint rewritten to match: `sha256sum -c` and `resumeproof
    check` accept the pair; only the signature can tell."""
    shutil.copyfile(run / "step_000002.pt", folder / "checkpoint.pt")
    fingerprint.write_sidecar(folder / "checkpoint.pt", fingerprint.sha256_file(folder / "checkpoint.pt"))
    assert subprocess.run(["sha256sum", "-c", "checkpoint.pt.sha256"], cwd=folder, capture_output=True).returncode == 0
    assert vet(folder / "checkpoint.pt").verdict is Verdict.ACCEPTED


TAMPERING = {
    "a changed byte in the checkpoint": "changed: checkpoint.pt",
    "the checkpoint replaced, its fingerprint rewritten": "changed: checkpoint.pt, checkpoint.pt.sha256",
    "EXPORT.json edited": f"changed: {EXPORT_JSON}",
    "PROOF.md edited": f"changed: {PROOF_MD}",
    "a file added": "added: notes.txt",
    "another key": None,  # the reason depends on the form
}


@pytest.mark.parametrize("how", TAMPERING)
@pytest.mark.parametrize("form", FORMS)
def test_tampering_is_refused_by_the_openssf_tool_and_by_check(signed, keys, run_dir, tmp_path, form, how):
    folder = shutil.copytree(signed[form], tmp_path / signed[form].name)
    if how == "a changed byte in the checkpoint":
        _flip(folder / "checkpoint.pt")
    elif how == "the checkpoint replaced, its fingerprint rewritten":
        _replace_checkpoint(folder, run_dir)
    elif how == "EXPORT.json edited":
        document = json.loads((folder / EXPORT_JSON).read_text())
        (folder / EXPORT_JSON).write_text(json.dumps({**document, "step": 2}))
    elif how == "PROOF.md edited":
        (folder / PROOF_MD).write_text((folder / PROOF_MD).read_text().replace("proven", "proven, trust me"))
    elif how == "a file added":
        (folder / "notes.txt").write_text("not in the export\n")
    other = how == "another key"
    proc = tool(form, folder, keys, other=other)
    assert proc.returncode == 1 and proc.stderr.startswith("Verification failed with error: "), (
        proc.stdout + proc.stderr
    )
    result = check(form, folder, keys, other=other)
    assert result.exit_code == 1, result.output
    said = (
        TAMPERING[how]
        or {
            "key": f"signed by another key than {_fingerprint(keys.other_public)}",
            "certificate": f"{CHAIN_REFUSED}: self-signed certificate in certificate chain",
        }[form]
    )
    assert result.stderr == f"{folder}: signature failed: {said}\n"
