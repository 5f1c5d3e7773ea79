"""sha256 fingerprints in `sha256sum` format, and the fsync-and-rename write they travel with."""

import hashlib
import os
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import BinaryIO

from resumeproof.common.errors import ResumeproofError

SIDECAR_SUFFIX = ".sha256"
_LINE = re.compile(r"([0-9a-f]{64})  (\S.*)\n?")


class FingerprintError(ResumeproofError):
    """A file's fingerprint is missing, malformed or does not match its bytes."""


def sidecar(path: Path) -> Path:
    return path.with_name(path.name + SIDECAR_SUFFIX)


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def fsync_dir(directory: Path) -> None:
    # A rename is only durable once the directory entry itself reaches the disk.
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(
    path: Path,
    data: bytes | Callable[[BinaryIO], object],
    check: Callable[[Path], object] | None = None,
    before_rename: Callable[[str], object] | None = None,
) -> str:
    """Write `data` (bytes, or a function writing into the open file) beside `path` under a temporary
    name, fsync, read it back and check it, rename it into place and fsync the directory: a crash
    leaves either the old state or the complete file. Returns the sha256 of the bytes read back
    from disk, not of anything in memory."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "wb") as f:
            if callable(data):
                data(f)  # streamed: no second copy of a large checkpoint in memory
            else:
                f.write(data)
            f.flush()
            os.fsync(f.fileno())
        with ThreadPoolExecutor(max_workers=1) as pool:  # hashing and checking both release the GIL
            hashing = pool.submit(sha256_file, tmp)
            if check is not None:
                check(tmp)
            digest = hashing.result()
        if isinstance(data, bytes) and digest != sha256_bytes(data):
            raise OSError(f"{tmp}: the bytes read back differ from the {len(data)} written")
        if before_rename is not None:
            before_rename(digest)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)  # after a failure, no temporary file is left behind
    fsync_dir(path.parent)
    return digest


def write_sidecar(path: Path, digest: str) -> None:
    write_atomic(sidecar(path), f"{digest}  {path.name}\n".encode("ascii"))


def sidecar_text(path: Path) -> str:
    """The text of `path`'s `.sha256` file, or a FingerprintError saying why there is none."""
    side = sidecar(path)
    try:
        return side.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FingerprintError(f"{path}: fingerprint file {side.name} is missing") from None
    except (OSError, UnicodeDecodeError) as err:
        raise FingerprintError(f"{side}: unreadable fingerprint ({err})") from None


def read_sidecar(path: Path) -> str:
    """The digest recorded for `path` in its `.sha256` file."""
    side, text = sidecar(path), sidecar_text(path)
    match = _LINE.fullmatch(text)
    if match is None:
        raise FingerprintError(f"{side}: not one '<64 hex digits>  <name>' line (sha256sum format)")
    if match.group(2) != path.name:
        raise FingerprintError(f"{side}: names {match.group(2)!r}, expected {path.name!r}")
    return match.group(1)


def verify(path: Path, data: bytes | None = None) -> str:
    """Check `path` (or its bytes already read) against its sidecar; return the digest."""
    expected = read_sidecar(path)
    actual = sha256_bytes(data) if data is not None else sha256_file(path)
    if actual != expected:
        raise FingerprintError(
            f"{path}: sha256 {actual[:12]}... does not match {sidecar(path).name} ({expected[:12]}...)"
        )
    return actual
