"""Signing an export's folder (verify/export/signature.py), on small folders made by hand: a signature made with a key
or with a certificate and its chain verifies and names its signer by the sha256 of its public key; a changed, added
or missing file, another key or another CA is refused and said; a bad key, certificate or chain is refused in one
line naming the option before anything is signed; without model_signing the option says how to install it; and
`resumeproof check` reports an export folder's signature (verified, failed, or present and unverified)."""

import hashlib
import shutil
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from resumeproof.cli import main
from resumeproof.verify.export import signature
from resumeproof.verify.export.signature import SIGNATURE, SignatureError, SignWith, Status
from resumeproof.verify.settings import SettingsError
from tests.verify.export.conftest import PASSWORD, Keys

pytestmark = pytest.mark.xdist_group("export")  # the folder's fixtures (conftest.py) are made once

FILES = {"checkpoint.pt": b"weights" * 100, "checkpoint.pt.sha256": b"digest\n", "sub/loss.jsonl": b"{}\n"}
FILES |= {"EXPORT.json": b'{"format": "resumeproof-export/1"}', "PROOF.md": b"# proof\n"}


def folder_of_files(root: Path) -> Path:
    for name, data in FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    return root


def fingerprint_of(public_pem: Path) -> str:
    key = serialization.load_pem_public_key(public_pem.read_bytes())
    der = key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return f"sha256:{hashlib.sha256(der).hexdigest()}"


def by_key(keys: Keys) -> SignWith:
    return SignWith(key=keys.key, password=PASSWORD)


def by_certificate(keys: Keys) -> SignWith:
    return SignWith(key=keys.leaf_key, cert=keys.leaf, chain=(keys.chain,))


@pytest.fixture(scope="module")
def signed(keys, tmp_path_factory) -> dict[str, Path]:
    """The same files signed with the key (`key`) and with the certificate (`certificate`)."""
    found = {}
    for name, given in (("key", by_key(keys)), ("certificate", by_certificate(keys))):
        folder = folder_of_files(tmp_path_factory.mktemp("signed") / "export")
        signature.sign(signature.signer(given), folder, folder / SIGNATURE)
        found[name] = folder
    return found


def test_a_folder_signed_with_a_key_verifies_and_names_the_key(keys, signed):
    checked = signature.verify(signed["key"], signature.trust(keys.public, ()))
    assert checked is not None and checked.status is Status.VERIFIED, checked
    assert checked.signer == fingerprint_of(keys.public) and checked.files == len(FILES)


def test_a_folder_signed_with_a_certificate_verifies_against_its_chain_and_names_the_certificates_key(keys, signed):
    checked = signature.verify(signed["certificate"], signature.trust(None, (keys.chain,)))
    assert checked is not None and checked.status is Status.VERIFIED, checked
    assert checked.signer == fingerprint_of_leaf(keys) and checked.certificate == "CN=resumeproof exporter"
    assert checked.line().endswith(f"signed by {checked.signer}, certificate CN=resumeproof exporter, over its 5 files")


def test_the_signer_records_its_key_and_certificate_before_it_signs(keys):
    by = signature.signer(by_certificate(keys)).signed
    assert by.file == SIGNATURE and by.method == "certificate" and by.certificate == "CN=resumeproof exporter"
    assert signature.signer(by_key(keys)).signed.signer == fingerprint_of(keys.public)


TAMPERING = {
    "a changed byte": ("checkpoint.pt", "changed: checkpoint.pt"),
    "an added file": ("sub/extra.txt", "added: sub/extra.txt"),
    "a removed file": ("sub/loss.jsonl", "missing: sub/loss.jsonl"),
    "an added git file": (".gitignore", None),  # outside the signature, as the OpenSSF tool has it by default
}


@pytest.mark.parametrize("how", TAMPERING)
@pytest.mark.parametrize("form", ["key", "certificate"])
def test_a_tampered_folder_is_refused_and_the_file_named(keys, signed, tmp_path, how, form):
    folder = shutil.copytree(signed[form], tmp_path / "export")
    name, said = TAMPERING[how]
    path = folder / name
    if how == "a changed byte":
        data = bytearray(path.read_bytes())
        data[len(data) // 2] ^= 1
        path.write_bytes(bytes(data))
    elif how == "a removed file":
        path.unlink()
    else:
        path.write_text("more\n")
    trusted = signature.trust(keys.public, ()) if form == "key" else signature.trust(None, (keys.chain,))
    checked = signature.verify(folder, trusted)
    assert checked is not None
    if said is None:
        assert checked.status is Status.VERIFIED, checked.reason
        return
    assert checked.status is Status.FAILED and checked.reason == said


@pytest.mark.parametrize(
    ("form", "other", "said"),
    [
        ("key", "other_public", "signed by another key than sha256:"),
        ("certificate", "other_chain", "its certificate does not chain to the certificates given: self-signed"),
        ("certificate", "other_public", "signed with a certificate (sha256:"),
        ("key", "chain", "signed with a key, not a certificate: verify it with --public-key"),
    ],
)
def test_another_key_or_another_ca_is_refused(keys, signed, form, other, said):
    path = getattr(keys, other)
    trusted = signature.trust(path, ()) if other.endswith("public") else signature.trust(None, (path,))
    checked = signature.verify(signed[form], trusted)
    assert checked is not None and checked.status is Status.FAILED
    assert checked.reason is not None and checked.reason.startswith(said), checked.reason


def test_a_certificate_of_another_key_than_the_public_key_given_is_refused(keys, signed):
    checked = signature.verify(signed["certificate"], signature.trust(keys.public, (keys.chain,)))
    assert checked is not None and checked.status is Status.FAILED
    assert checked.reason == f"signed by {fingerprint_of_leaf(keys)}, not by {fingerprint_of(keys.public)}"


def fingerprint_of_leaf(keys: Keys) -> str:
    public = x509.load_pem_x509_certificate(keys.leaf.read_bytes()).public_key()
    der = public.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return f"sha256:{hashlib.sha256(der).hexdigest()}"


def test_no_signature_fails_where_a_key_is_given_and_is_nothing_to_say_without(keys, tmp_path):
    folder = folder_of_files(tmp_path / "export")
    assert signature.verify(folder, None) is None
    checked = signature.verify(folder, signature.trust(keys.public, ()))
    assert (
        checked is not None
        and checked.status is Status.FAILED
        and checked.reason == "no model.sig: the export is not signed"
    )


def test_a_signature_present_without_a_key_is_unverified_never_a_pass(signed):
    checked = signature.verify(signed["key"], None)
    assert checked is not None and checked.status is Status.UNVERIFIED and not checked.passed


def test_a_file_that_is_not_a_signature_is_refused(keys, tmp_path):
    folder = folder_of_files(tmp_path / "export")
    (folder / SIGNATURE).write_text("{}")
    checked = signature.verify(folder, signature.trust(keys.public, ()))
    assert checked is not None and checked.status is Status.FAILED
    assert checked.reason == "model.sig is not an OpenSSF Model Signing signature ('verificationMaterial')"


def write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def rsa_key(path: Path) -> Path:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    return write(path, pem)


def secp256k1_key(path: Path) -> Path:
    key = ec.generate_private_key(ec.SECP256K1())
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    return write(path, pem)


def bad(k: Keys, t: Path) -> dict[str, tuple[SignWith, str]]:
    """Each bad signer and the start of the one line that refuses it."""
    leaf, other_key, rsa, k1 = k.leaf, k.other_key, rsa_key(t / "rsa.pem"), secp256k1_key(t / "k1.pem")
    return {
        "missing": (SignWith(key=t / "absent.pem"), f"--sign-key {t}/absent.pem: cannot be read: No such file"),
        "a public key": (SignWith(key=k.public), f"--sign-key {k.public}: not a PEM private key"),
        "wrong password": (
            SignWith(key=k.key, password="wrong"),
            f"--sign-key {k.key}: --sign-password does not decrypt it",
        ),
        "no password": (
            SignWith(key=k.key),
            f"--sign-key {k.key}: encrypted: give --sign-password (or RESUMEPROOF_SIGN_PASSWORD)",
        ),
        "an encrypted certificate's key": (
            SignWith(key=k.key, password=PASSWORD, cert=leaf, chain=(k.chain,)),
            f"--sign-key {k.key}: encrypted; model_signing signs with a certificate's key only unencrypted",
        ),
        "an RSA key": (SignWith(key=rsa), f"--sign-key {rsa}: RSA, not an elliptic-curve key"),
        "secp256k1": (SignWith(key=k1), f"--sign-key {k1}: on curve secp256k1"),
        "another key's certificate": (
            SignWith(key=other_key, cert=leaf, chain=(k.chain,)),
            f"--sign-cert {leaf}: its public key is not --sign-key {other_key}'s",
        ),
        "not a certificate": (
            SignWith(key=k.leaf_key, cert=k.public, chain=(k.chain,)),
            f"--sign-cert {k.public}: not a PEM certificate",
        ),
        "a chain that does not trust it": (
            SignWith(key=k.leaf_key, cert=leaf, chain=(k.other_chain,)),
            f"--sign-cert {leaf} with --sign-chain {k.other_chain}: its signature does not verify: its certificate "
            "does not chain to the certificates given: unable to get local issuer certificate",
        ),
    }


BAD = ["missing", "a public key", "wrong password", "no password", "an encrypted certificate's key", "an RSA key"]
BAD += ["secp256k1"]
BAD += ["another key's certificate", "not a certificate", "a chain that does not trust it"]


@pytest.mark.parametrize("case", BAD)
def test_a_bad_key_certificate_or_chain_is_refused_in_one_line_naming_the_option(keys, tmp_path, case):
    given, said = bad(keys, tmp_path)[case]
    with pytest.raises(SignatureError) as refused:
        signature.signer(given)
    message = str(refused.value)
    assert message.startswith(said) and "\n" not in message, message


def test_a_password_for_a_key_that_is_not_encrypted_is_not_needed(keys, tmp_path):
    """As a password set in the environment for every export: the key that needs none signs without it."""
    found = signature.signer(SignWith(key=keys.other_key, password="not needed"))
    assert found.password is None
    folder = folder_of_files(tmp_path / "export")
    signature.sign(found, folder, folder / SIGNATURE)
    checked = signature.verify(folder, signature.trust(keys.other_public, ()))
    assert checked is not None and checked.passed, checked


def test_a_certificate_needs_its_chain_and_a_chain_its_certificate(keys):
    with pytest.raises(SettingsError, match="--sign-cert: needs --sign-chain"):
        SignWith(key=keys.leaf_key, cert=keys.leaf)
    with pytest.raises(SettingsError, match="--sign-chain: needs --sign-cert"):
        SignWith(key=keys.leaf_key, chain=(keys.chain,))


def test_without_model_signing_the_option_says_how_to_install_it(keys, monkeypatch):
    for name in ("model_signing", "model_signing.signing", "model_signing.verifying"):
        monkeypatch.setitem(sys.modules, name, None)  # any import of it now fails
    with pytest.raises(
        SignatureError, match=r"^--sign-key needs the export extra: pip install 'resumeproof\[export\]'$"
    ):
        signature.signer(by_key(keys))
    result = check(keys.public, "--public-key", keys.public)
    assert result.exit_code == 2
    assert (
        result.stderr
        == "resumeproof check: error: --public-key needs the export extra: pip install 'resumeproof[export]'\n"
    )


def check(*args: object):
    return CliRunner().invoke(main, ["check", *map(str, args)], prog_name="resumeproof")


def test_check_verifies_an_export_folders_signature_and_says_which_key_signed(keys, signed):
    result = check(signed["key"], "--public-key", keys.public)
    assert result.exit_code == 0, result.output
    said = (
        f"{signed['key']}: signature verified: signed by {fingerprint_of(keys.public)}, over its {len(FILES)} files\n"
    )
    assert result.stdout == said


def test_check_of_a_file_inside_an_export_verifies_the_folder_once_and_fails_it_for_another_key(keys, signed):
    inside = [signed["key"] / "checkpoint.pt.sha256", signed["key"] / "sub" / "loss.jsonl"]
    result = check(*inside, "--public-key", keys.other_public)
    assert result.exit_code == 1, result.output
    failed = [line for line in result.stderr.splitlines() if "signature" in line]
    assert failed == [
        f"{signed['key']}: signature failed: signed by another key than {fingerprint_of(keys.other_public)}"
    ]


def test_check_without_a_key_reports_a_signature_present_and_unverified(signed):
    result = check(signed["certificate"])
    assert result.exit_code == 0, result.output
    said = "signature unverified: model.sig present, not verified: give --public-key (or --cert-chain) to verify it"
    assert result.stdout == f"{signed['certificate']}: {said}\n"


def test_check_with_a_key_fails_a_path_that_no_export_signed(keys, tmp_path):
    path = write(tmp_path / "loose.bin", b"x")
    result = check(path, "--public-key", keys.public, "--json")
    assert result.exit_code == 1, result.output
    assert '"status": "failed"' in result.stdout and "nothing signed it" in result.stdout


@pytest.mark.parametrize("what", ["missing", "private", "not a key"])
def test_check_with_an_unreadable_public_key_is_one_line_and_exit_2(keys, signed, tmp_path, what):
    path = {"missing": tmp_path / "absent.pem", "private": keys.other_key, "not a key": keys.chain}[what]
    result = check(signed["key"], "--public-key", path)
    assert result.exit_code == 2 and result.stderr.count("\n") == 1, result.output
    assert result.stderr.startswith(f"resumeproof check: error: --public-key {path}: ")
