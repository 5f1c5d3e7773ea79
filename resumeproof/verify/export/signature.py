"""Signed exports: an OpenSSF Model Signing signature, `model.sig`, over every file of an export's folder, made with an
elliptic-curve key (or a certificate of one and its chain) and verified as the OpenSSF tool verifies it
(`model_signing verify key|certificate FOLDER --signature FOLDER/model.sig`): the same library, the same files
(model.sig itself and the tool's default git paths left out), so that either accepts what the other accepts.

A signer is checked before anything is copied: its key read and a probe folder signed and verified with it, so a
missing key, a wrong password or a certificate its chain does not trust is one line, not a failure after the copy.
model_signing (the export extra) and cryptography, which it brings, are imported only here and only when a signature
is made or verified; neither imports torch.
"""

import base64
import binascii
import hashlib
import importlib
import json
import tempfile
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from resumeproof.common.errors import ResumeproofError, one_line
from resumeproof.common.fingerprint import sha256_file
from resumeproof.verify.export.store import INSTALL
from resumeproof.verify.settings import SettingsError

SIGNATURE = "model.sig"  # in the export's folder, as `model_signing sign` names it by default
GIT_PATHS = (".git", ".gitattributes", ".github", ".gitignore")  # what the OpenSSF tool leaves out by default
CURVES = ("secp256r1", "secp384r1", "secp521r1")  # the curves OpenSSF Model Signing signs with
NEEDS = "OpenSSF Model Signing signs with an elliptic-curve key: P-256, P-384 or P-521"
SIGN_KEY, SIGN_PASSWORD, SIGN_CERT, SIGN_CHAIN = "--sign-key", "--sign-password", "--sign-cert", "--sign-chain"
PASSWORD_ENV = "RESUMEPROOF_SIGN_PASSWORD"  # --sign-password's variable: a password typed stays in the shell's history
PUBLIC_KEY, CERT_CHAIN = "--public-key", "--cert-chain"


class SignatureError(ResumeproofError):
    """A key, certificate or chain that cannot sign or verify, or the extra missing: one line naming the option."""


class Method(StrEnum):
    KEY = "key"  # an elliptic-curve private key: `model_signing verify key --public_key`
    CERTIFICATE = "certificate"  # a certificate of that key: `model_signing verify certificate --certificate_chain`


@dataclass(frozen=True, kw_only=True)
class SignWith:
    """What an export is asked to sign with."""

    key: Path  # --sign-key: the private key, PEM (the certificate's, with --sign-cert)
    password: str | None = None  # --sign-password (or PASSWORD_ENV): where the key is encrypted
    cert: Path | None = None  # --sign-cert: the signing certificate, PEM (the offline certificate form)
    chain: tuple[Path, ...] = ()  # --sign-chain: the certificates it chains to, up to the root

    def __post_init__(self) -> None:
        if self.cert is not None and not self.chain:
            raise SettingsError(SIGN_CERT, f"needs {SIGN_CHAIN}: the export verifies its signature against it")
        if self.chain and self.cert is None:
            raise SettingsError(SIGN_CHAIN, f"needs {SIGN_CERT}: the certificate that chains to it")

    @property
    def method(self) -> Method:
        return Method.KEY if self.cert is None else Method.CERTIFICATE


@dataclass(frozen=True, kw_only=True)
class Signed:
    """What EXPORT.json says of its signature, written before the signature is (so: by whom it is to be signed)."""

    file: str  # model.sig, in the export's folder
    signer: str  # sha256:<hex> of the signer's public key, its DER SubjectPublicKeyInfo
    method: Method
    certificate: str | None = None  # the signing certificate's subject (RFC 4514), for the certificate form


@dataclass(frozen=True, kw_only=True)
class Signer:
    """A signer checked up front: what it signs with, and what it will have signed as."""

    given: SignWith
    signed: Signed
    public_pem: bytes  # its public key, PEM, for the export's own verification
    password: str | None = None  # what the key needs: None where it is not encrypted


@dataclass(frozen=True, kw_only=True)
class Trust:
    """What a signature is verified with: a public key, the certificates a signing certificate chains to, or both
    (then the certificate must also be that key's)."""

    public_key: Path | None = None
    chain: tuple[Path, ...] = ()
    fingerprint: str | None = None  # sha256:<hex> of public_key
    hint: str | None = None  # the OpenSSF tool's identifier of public_key: sha256 of its PEM SubjectPublicKeyInfo


class Status(StrEnum):
    VERIFIED = "verified"  # model.sig verifies over every file of the folder: a pass
    FAILED = "failed"  # a file changed, added or missing, another signer, an untrusted certificate, no model.sig
    UNVERIFIED = "unverified"  # model.sig is there, and nothing was given to verify it with: never a pass


@dataclass(frozen=True, kw_only=True)
class Verified:
    """One export folder's signature, as `resumeproof check` reports it."""

    folder: Path
    status: Status
    signer: str | None = None  # sha256:<hex> of the public key that signed, where verified
    certificate: str | None = None  # the signing certificate's subject (RFC 4514), for the certificate form
    files: int = 0  # the files the signature covers, where verified
    reason: str | None = None  # why it failed, or why it was not verified

    @property
    def passed(self) -> bool:
        return self.status is Status.VERIFIED

    def line(self) -> str:
        if self.status is Status.VERIFIED:
            by = f"{self.signer}, certificate {self.certificate}" if self.certificate else self.signer
            files = f"{self.files} file{'s' if self.files != 1 else ''}"
            return f"{self.folder}: signature verified: signed by {by}, over its {files}"
        return f"{self.folder}: signature {self.status}: {self.reason}"


def signer(given: SignWith) -> Signer:
    """The signer, checked before anything is copied: its key (and certificate, and chain) read, and a probe folder
    signed and verified with it. SignatureError names the option at fault."""
    _library(SIGN_KEY)
    key, password = _private_key(given.key, given.password)
    certificate = None
    if given.cert is not None:
        if password is not None:  # its certificate signer reads the key without one
            raise SignatureError(
                f"{SIGN_KEY} {given.key}: encrypted; model_signing signs with a certificate's key only unencrypted"
            )
        certificate = _certificate(given.cert)
        if certificate.public_key() != key.public_key():
            raise SignatureError(f"{SIGN_CERT} {given.cert}: its public key is not {SIGN_KEY} {given.key}'s")
        _certificates(SIGN_CHAIN, given.chain)
    subject = certificate.subject.rfc4514_string() if certificate is not None else None
    signed = Signed(file=SIGNATURE, signer=fingerprint(key.public_key()), method=given.method, certificate=subject)
    found = Signer(given=given, signed=signed, public_pem=_pem(key.public_key()), password=password)
    _probe(found)
    return found


def trust(public_key: Path | None, chain: tuple[Path, ...]) -> Trust | None:
    """What `resumeproof check` verifies with (--public-key, --cert-chain), read and checked; None where neither."""
    if public_key is None and not chain:
        return None
    _library(PUBLIC_KEY if public_key is not None else CERT_CHAIN)
    _certificates(CERT_CHAIN, chain)
    if public_key is None:
        return Trust(chain=chain)
    key = _public_key(public_key)
    return Trust(public_key=public_key, chain=chain, fingerprint=fingerprint(key), hint=_hint(key))


def trust_of(found: Signer, folder: Path) -> Trust:
    """What the export verifies its own signature with: the signer's public key (written into `folder`, since the
    library reads keys from files), and for the certificate form the chain too."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "signer.pub.pem"
    path.write_bytes(found.public_pem)
    hint = hashlib.sha256(found.public_pem).hexdigest()
    return Trust(public_key=path, chain=found.given.chain, fingerprint=found.signed.signer, hint=hint)


def sign(found: Signer, folder: Path, out: Path) -> None:
    """`model_signing sign key|certificate FOLDER --signature FOLDER/model.sig`, the signature written to `out`."""
    from model_signing import hashing, signing

    config = signing.Config()
    given = found.given
    if given.cert is None:
        # model_signing 1.1.1 hands the password to cryptography, which takes bytes (its own hint says str)
        password: Any = None if found.password is None else found.password.encode()
        config.use_elliptic_key_signer(private_key=given.key, password=password)
    else:
        config.use_certificate_signer(
            private_key=given.key, signing_certificate=given.cert, certificate_chain=given.chain
        )
    config.set_hashing_config(hashing.Config().set_ignored_paths(paths=[SIGNATURE])).sign(folder, out)


def verify(folder: Path, trusted: Trust | None) -> Verified | None:
    """The signature of an export's folder (FOLDER/model.sig), verified as the OpenSSF tool verifies it. Without
    `trusted`, a signature there is reported unverified, and none at all is nothing to report (None); with it, no
    signature fails."""
    path = folder / SIGNATURE
    if not path.is_file():
        if trusted is None:
            return None
        return Verified(folder=folder, status=Status.FAILED, reason=f"no {SIGNATURE}: the export is not signed")
    if trusted is None:
        said = f"{SIGNATURE} present, not verified: give {PUBLIC_KEY} (or {CERT_CHAIN}) to verify it"
        return Verified(folder=folder, status=Status.UNVERIFIED, reason=said)
    try:
        bundle = _bundle(path)
    except (OSError, ValueError, KeyError, TypeError, IndexError) as err:
        said = f"{SIGNATURE} is not an OpenSSF Model Signing signature ({one_line(err)})"
        return Verified(folder=folder, status=Status.FAILED, reason=said)
    refused = _refused(bundle, trusted)
    if refused is not None:
        return Verified(folder=folder, status=Status.FAILED, reason=refused)
    try:
        _verifier(bundle, trusted).verify(folder, path)
    except Exception as err:  # the library's failures have no common kind: each is explained below, or quoted
        return Verified(folder=folder, status=Status.FAILED, reason=_why(folder, bundle, err))
    if bundle.leaf is None:
        return Verified(folder=folder, status=Status.VERIFIED, signer=trusted.fingerprint, files=len(bundle.resources))
    leaf = _leaf(bundle)
    signer, subject = fingerprint(leaf.public_key()), leaf.subject.rfc4514_string()
    return Verified(
        folder=folder, status=Status.VERIFIED, signer=signer, certificate=subject, files=len(bundle.resources)
    )


def folder_of(path: Path, export_json: str) -> Path | None:
    """The export folder `path` is, or lies in: the nearest folder at or above it holding EXPORT.json."""
    for folder in (path, *path.parents, *path.absolute().parents):
        if folder.is_dir() and (folder / export_json).is_file():
            return folder
    return None


def fingerprint(public_key: Any) -> str:
    """`sha256:<hex>` of a public key's DER SubjectPublicKeyInfo (`openssl pkey -pubin -outform DER | sha256sum`)."""
    from cryptography.hazmat.primitives import serialization

    der = public_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return f"sha256:{hashlib.sha256(der).hexdigest()}"


def _library(flag: str) -> None:
    """model_signing imported (the signer's and the verifier's side: their imports fail alike where it is broken)."""
    try:
        for module in ("model_signing.signing", "model_signing.verifying"):
            importlib.import_module(module)
    except ImportError:
        raise SignatureError(f"{flag} needs the export extra: {INSTALL}") from None


def _private_key(path: Path, password: str | None) -> tuple[Any, str | None]:
    """The key and the password it needs (None where it is not encrypted, whatever was given: a password in the
    environment is not asked of every key), or one line saying why not: unreadable, not a private key, encrypted
    without the password that decrypts it, not on a curve the OpenSSF tool signs with."""
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives import serialization

    data = _read(SIGN_KEY, path)
    try:
        key, needs = serialization.load_pem_private_key(data, None), None
    except TypeError:  # encrypted
        if password is None:
            raise SignatureError(f"{SIGN_KEY} {path}: encrypted: give {SIGN_PASSWORD} (or {PASSWORD_ENV})") from None
        try:
            key, needs = serialization.load_pem_private_key(data, password.encode()), password
        except (ValueError, UnsupportedAlgorithm):
            raise SignatureError(f"{SIGN_KEY} {path}: {SIGN_PASSWORD} does not decrypt it") from None
    except (ValueError, UnsupportedAlgorithm):
        raise SignatureError(f"{SIGN_KEY} {path}: not a PEM private key") from None
    _elliptic(SIGN_KEY, path, key)
    return key, needs


def _public_key(path: Path) -> Any:
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives import serialization

    try:
        key = serialization.load_pem_public_key(_read(PUBLIC_KEY, path))
    except (ValueError, UnsupportedAlgorithm):
        raise SignatureError(f"{PUBLIC_KEY} {path}: not a PEM public key") from None
    _elliptic(PUBLIC_KEY, path, key)
    return key


def _elliptic(flag: str, path: Path, key: Any) -> None:
    from cryptography.hazmat.primitives.asymmetric import ec

    if not isinstance(key, ec.EllipticCurvePrivateKey | ec.EllipticCurvePublicKey):
        kind = type(key).__name__.replace("PrivateKey", "").replace("PublicKey", "")
        raise SignatureError(f"{flag} {path}: {kind}, not an elliptic-curve key ({NEEDS})")
    if key.curve.name not in CURVES:
        raise SignatureError(f"{flag} {path}: on curve {key.curve.name} ({NEEDS})")


def _certificate(path: Path) -> Any:
    from cryptography import x509

    try:
        return x509.load_pem_x509_certificate(_read(SIGN_CERT, path))
    except ValueError:
        raise SignatureError(f"{SIGN_CERT} {path}: not a PEM certificate") from None


def _certificates(flag: str, paths: tuple[Path, ...]) -> None:
    from cryptography import x509

    for path in paths:
        try:
            x509.load_pem_x509_certificates(_read(flag, path))
        except ValueError:
            raise SignatureError(f"{flag} {path}: not PEM certificates") from None


def _read(flag: str, path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as err:
        raise SignatureError(f"{flag} {path}: cannot be read: {err.strerror or one_line(err)}") from None


def _probe(found: Signer) -> None:
    """A small folder signed and verified as an export will be: what reading the files could not show (a certificate
    its chain does not trust, or that may not sign) is refused now, before anything is copied."""
    with tempfile.TemporaryDirectory(prefix="resumeproof-sign-") as work:
        folder = Path(work) / "probe"
        folder.mkdir()
        (folder / "probe.txt").write_text("resumeproof export: a signature probe\n")
        try:
            sign(found, folder, folder / SIGNATURE)
        except Exception as err:  # the library's own kinds
            raise SignatureError(f"{_flags(found.given)}: cannot sign: {one_line(err)}") from err
        checked = verify(folder, trust_of(found, Path(work)))
    if checked is None or not checked.passed:
        said = checked.reason if checked is not None else f"no {SIGNATURE}"
        raise SignatureError(f"{_flags(found.given)}: its signature does not verify: {said}")


def _flags(given: SignWith) -> str:
    if given.cert is None:
        return f"{SIGN_KEY} {given.key}"
    return f"{SIGN_CERT} {given.cert} with {SIGN_CHAIN} {' '.join(map(str, given.chain))}"


@dataclass(frozen=True, kw_only=True)
class Bundle:
    """What model.sig says, read before it is verified: how it was signed, and the files it lists (to explain a
    failure; never trusted for a pass, which is the library's)."""

    hint: str | None  # the key form: the OpenSSF tool's identifier of the signer's key
    leaf: bytes | None  # the certificate form: the signing certificate, DER
    resources: dict[str, str]  # every file it covers, with its digest


def _bundle(path: Path) -> Bundle:
    document = json.loads(path.read_text(encoding="utf-8"))
    material = document["verificationMaterial"]
    certificates = material.get("x509CertificateChain", {}).get("certificates", [])
    leaf = _b64(certificates[0]["rawBytes"]) if certificates else None
    hint = None if leaf is not None else material["publicKey"]["hint"]
    statement = json.loads(_b64(document["dsseEnvelope"]["payload"]))
    resources = {r["name"]: r["digest"] for r in statement["predicate"]["resources"]}
    return Bundle(hint=hint, leaf=leaf, resources=resources)


def _b64(text: str) -> bytes:
    try:
        return base64.b64decode(text, validate=True)
    except binascii.Error as err:
        raise ValueError(f"not base64: {one_line(err)}") from None


def _leaf(bundle: Bundle) -> Any:
    from cryptography import x509

    return x509.load_der_x509_certificate(bundle.leaf or b"")


def _refused(bundle: Bundle, trusted: Trust) -> str | None:
    """What the signature's own fields already refuse: a form there is nothing to verify with, another key."""
    if bundle.leaf is None and trusted.public_key is None:
        return f"signed with a key, not a certificate: verify it with {PUBLIC_KEY}"
    if bundle.leaf is not None and not trusted.chain:
        return f"signed with a certificate ({fingerprint(_leaf(bundle).public_key())}): verify it with {CERT_CHAIN}"
    if bundle.leaf is None and bundle.hint != trusted.hint:
        return f"signed by another key than {trusted.fingerprint}"
    if bundle.leaf is not None and trusted.fingerprint is not None:
        signed_by = fingerprint(_leaf(bundle).public_key())
        if signed_by != trusted.fingerprint:
            return f"signed by {signed_by}, not by {trusted.fingerprint}"
    return None


def _verifier(bundle: Bundle, trusted: Trust) -> Any:
    """The library's verifier, configured as `model_signing verify key|certificate` configures it."""
    from model_signing import hashing, verifying

    config = verifying.Config()
    if bundle.leaf is None:
        config.use_elliptic_key_verifier(public_key=trusted.public_key or Path())
    else:
        config.use_certificate_verifier(certificate_chain=trusted.chain)
    return config.set_hashing_config(hashing.Config().set_ignored_paths(paths=[SIGNATURE]))


def covered(path: Path) -> dict[str, str]:
    """The files a signature (model.sig) covers, with their sha256, as it lists them."""
    return _bundle(path).resources


def differences(found: dict[str, str], signed: dict[str, str]) -> str | None:
    """How the files found differ from those signed (both: path -> sha256): changed, added, missing; None if alike."""
    changed = sorted(name for name in found.keys() & signed.keys() if found[name] != signed[name])
    added, missing = sorted(found.keys() - signed.keys()), sorted(signed.keys() - found.keys())
    kinds = (("changed", changed), ("added", added), ("missing", missing))
    return "; ".join(f"{what}: {', '.join(names)}" for what, names in kinds if names) or None


def _why(folder: Path, bundle: Bundle, err: Exception) -> str:
    """A failed verification explained: the files that differ from those signed, a certificate the chain does not
    trust, else the library's own words."""
    from OpenSSL.crypto import X509StoreContextError  # pyopenssl: model_signing's certificate verifier uses it

    if isinstance(err, X509StoreContextError):
        return f"its certificate does not chain to the certificates given: {one_line(err)}"
    return differences(_digests(folder), bundle.resources) or f"{SIGNATURE} does not verify: {one_line(err)}"


def _digests(folder: Path) -> dict[str, str]:
    """Every file the OpenSSF tool hashes in `folder` (not model.sig, not its default git paths), with its sha256."""
    left_out = {folder / name for name in (SIGNATURE, *GIT_PATHS)}
    found = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file() and not ({path, *path.parents} & left_out):
            found[path.relative_to(folder).as_posix()] = sha256_file(path)
    return found


def _pem(public_key: Any) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return bytes(public_key.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))


def _hint(public_key: Any) -> str:
    return hashlib.sha256(_pem(public_key)).hexdigest()
