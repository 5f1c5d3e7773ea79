"""The export's fixtures, made once for the folder (its modules run on one worker, xdist_group "export"): a short
reference run with a generation after every step, a verification's folder made of it, an S3 server on
localhost (moto's), a fresh bucket for each test, and keys to sign with: elliptic-curve keys, and an offline CA
with a leaf certificate (made with cryptography: no network)."""

import datetime
import json
import shutil
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from resumeproof.common import fingerprint
from resumeproof.common.protocol import CHECKPOINT, CONTINUOUS, INTERRUPTED, PROTOCOL, SUMMARY
from tests.helpers import TRAIN, run_train

STEPS = 3  # the run's final step: generations step_000001.pt to step_000003.pt, and checkpoint.pt at 3


def make_run(out: Path) -> Path:
    """`train.py --steps 3 --checkpoint-every 1`: checkpoint.pt, three generations, summary.json, loss.jsonl."""
    proc = run_train("--steps", str(STEPS), "--output", out, "--checkpoint-every", "1")
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.fixture(scope="session")
def run_dir(tmp_path_factory) -> Path:
    return make_run(tmp_path_factory.mktemp("export") / "run")


@pytest.fixture(scope="session")
def verification_dir(run_dir, tmp_path_factory) -> Path:
    """A verification's folder as `resumeproof verify --steps 3 --interrupt-at 2` leaves it, made of the run: the
    continuous summary, and the interrupted checkpoint at step 2 (the run's generation, whose next update the
    continuous history holds)."""
    out = tmp_path_factory.mktemp("export") / "verification"
    (out / CONTINUOUS).mkdir(parents=True)
    (out / INTERRUPTED).mkdir()
    shutil.copyfile(run_dir / SUMMARY, out / CONTINUOUS / SUMMARY)
    interrupted = out / INTERRUPTED / CHECKPOINT
    shutil.copyfile(run_dir / "step_000002.pt", interrupted)
    fingerprint.write_sidecar(interrupted, fingerprint.sha256_file(interrupted))
    document = {"protocol": PROTOCOL, "train_cmd": f"{sys.executable} -B {TRAIN}", "steps": STEPS, "interrupt_at": [2]}
    (out / "verification.json").write_text(json.dumps(document))
    return out


@pytest.fixture(scope="session")
def s3_server() -> Iterator[str]:
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture(scope="module")
def aws(s3_server) -> Iterator[dict[str, str]]:
    """The variables that point s3:// at the server, set for the module and passed to the processes it starts."""
    env = {
        "AWS_ENDPOINT_URL": s3_server,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_EC2_METADATA_DISABLED": "true",
    }
    with pytest.MonkeyPatch.context() as patch:
        for name, value in env.items():
            patch.setenv(name, value)
        yield env


def new_bucket() -> str:
    """A fresh, empty bucket on the server (the AWS variables set): its URL, s3://NAME."""
    import fsspec

    name = f"export-{uuid.uuid4().hex[:12]}"
    fs, _ = fsspec.url_to_fs(f"s3://{name}")
    fs.mkdir(name)
    return f"s3://{name}"


@pytest.fixture
def bucket(aws) -> str:
    return new_bucket()


PASSWORD = "correct horse"  # the signing key's, encrypted


@dataclass(frozen=True)
class Keys:
    """PEM files in one folder: an encrypted P-256 key and its public key; another key; a P-384 leaf key with its
    certificate from an offline CA (the chain), and another CA that did not issue it."""

    key: Path  # encrypted with PASSWORD
    public: Path
    other_key: Path  # not encrypted
    other_public: Path
    leaf_key: Path
    leaf: Path  # the signing certificate: digitalSignature, codeSigning
    chain: Path  # the CA that issued it
    other_chain: Path  # a CA that did not


def make_keys(folder: Path) -> Keys:
    folder.mkdir(parents=True, exist_ok=True)
    key, other, leaf_key = (ec.generate_private_key(c) for c in (ec.SECP256R1(), ec.SECP256R1(), ec.SECP384R1()))
    ca_key, other_ca_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca, other_ca = _ca(ca_key, "resumeproof test CA"), _ca(other_ca_key, "another CA")
    return Keys(
        key=_write(folder / "key.pem", _private(key, PASSWORD)),
        public=_write(folder / "key.pub.pem", _public(key)),
        other_key=_write(folder / "other.pem", _private(other)),
        other_public=_write(folder / "other.pub.pem", _public(other)),
        leaf_key=_write(folder / "leaf.key.pem", _private(leaf_key)),
        leaf=_write(folder / "leaf.pem", _certificate(_leaf(leaf_key, ca, ca_key))),
        chain=_write(folder / "ca.pem", _certificate(ca)),
        other_chain=_write(folder / "other-ca.pem", _certificate(other_ca)),
    )


@pytest.fixture(scope="session")
def keys(tmp_path_factory) -> Keys:
    return make_keys(tmp_path_factory.mktemp("keys"))


def _ca(key, name: str):
    usage = _usage(key_cert_sign=True, crl_sign=True)
    builder = _builder(_name(name), _name(name), key.public_key(), days=30)
    builder = builder.add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
    return builder.add_extension(usage, critical=True).sign(key, hashes.SHA256())


def _leaf(key, ca, ca_key):
    builder = _builder(_name("resumeproof exporter"), ca.subject, key.public_key(), days=7)
    builder = builder.add_extension(_usage(digital_signature=True), critical=True)
    builder = builder.add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CODE_SIGNING]), critical=False)
    return builder.sign(ca_key, hashes.SHA256())


def _builder(subject, issuer, public_key, days: int):
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=days))
    )


def _usage(**granted: bool):
    names = ("digital_signature", "content_commitment", "key_encipherment", "data_encipherment", "key_agreement")
    names += ("key_cert_sign", "crl_sign", "encipher_only", "decipher_only")
    return x509.KeyUsage(**{name: granted.get(name, False) for name in names})


def _name(common: str):
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _private(key, password: str | None = None) -> bytes:
    encryption = (
        serialization.NoEncryption() if password is None else serialization.BestAvailableEncryption(password.encode())
    )
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)


def _public(key) -> bytes:
    return key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


def _certificate(certificate) -> bytes:
    return certificate.public_bytes(serialization.Encoding.PEM)


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path
