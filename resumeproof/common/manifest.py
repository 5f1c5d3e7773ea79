"""A directory checkpoint's fingerprint: its sidecar lists every file, in sha256sum format.

    3f2a...  checkpoint.pt/model.safetensors
    9c41...  checkpoint.pt/optimizer.bin

One line per regular file under the directory, sorted by path, each path relative to the folder
that holds the checkpoint, so that `sha256sum -c checkpoint.pt.sha256` run there verifies it. The
directory holds nothing else: a symbolic link, a device or a file the sidecar does not list is
refused, and so is a listed file that is missing. The directory's digest is the sha256 of the
sidecar's text, which names every file with its content.
"""

import hashlib
import re
from pathlib import Path

from resumeproof.common.fingerprint import FingerprintError, sha256_file, sidecar, sidecar_text, write_atomic

_LINE = re.compile(r"([0-9a-f]{64})  ([^\n\\]+)")


class ManifestError(FingerprintError):
    """A directory checkpoint whose files and sidecar disagree."""


def files(directory: Path) -> list[str]:
    """The relative paths of the regular files under `directory`, sorted; anything else is refused."""
    found = []
    for path in sorted(directory.rglob("*")):
        relative = path.relative_to(directory).as_posix()
        if path.is_symlink() or not (path.is_file() or path.is_dir()):
            raise ManifestError(f"{directory}: {relative} is not a regular file or folder; refusing")
        if "\n" in relative or "\\" in relative:
            raise ManifestError(f"{directory}: {relative!r} has a name sha256sum would escape; refusing")
        if path.is_file():
            found.append(relative)
    return found


def text(directory: Path, digests: dict[str, str]) -> str:
    return "".join(f"{digests[name]}  {directory.name}/{name}\n" for name in sorted(digests))


def write(directory: Path, named: Path | None = None) -> str:
    """Hash every file under `directory` and write its sidecar atomically; return the directory's digest.
    `named`: the path a folder staged under a temporary name will take; the sidecar is that path's."""
    named = named or directory
    digests = {name: sha256_file(directory / name) for name in files(directory)}
    content = text(named, digests)
    write_atomic(sidecar(named), content.encode())
    return hashlib.sha256(content.encode()).hexdigest()


def read(directory: Path) -> dict[str, str]:
    """The digests the sidecar records, by relative path, checked for form."""
    side = sidecar(directory)
    try:
        content = sidecar_text(directory)
    except FingerprintError as err:
        raise ManifestError(str(err)) from None
    lines = content.splitlines()
    if not lines or not content.endswith("\n"):
        raise ManifestError(f"{side}: not a list of '<64 hex digits>  {directory.name}/<file>' lines")
    digests: dict[str, str] = {}
    for number, line in enumerate(lines, start=1):
        match = _LINE.fullmatch(line)
        name = match.group(2).removeprefix(f"{directory.name}/") if match else ""
        if match is None or not match.group(2).startswith(f"{directory.name}/") or not _plain(name):
            raise ManifestError(f"{side}: line {number} is not '<64 hex digits>  {directory.name}/<relative path>'")
        if name in digests:
            raise ManifestError(f"{side}: {name} is listed twice")
        digests[name] = match.group(1)
    return digests


def verify(directory: Path) -> tuple[str, dict[str, str]]:
    """Every file listed is there with its digest, and nothing else is; the directory's digest and the files'."""
    recorded = read(directory)
    present = files(directory)
    extra, missing = sorted(set(present) - set(recorded)), sorted(set(recorded) - set(present))
    if extra or missing:
        said = "; ".join(
            [*(f"{name} is not listed" for name in extra[:3]), *(f"{name} is missing" for name in missing[:3])]
        )
        raise ManifestError(f"{directory}: {said} in {sidecar(directory).name}")
    for name in present:
        actual = sha256_file(directory / name)
        if actual != recorded[name]:
            raise ManifestError(f"{directory}/{name}: sha256 {actual[:12]}... does not match {sidecar(directory).name}")
    return hashlib.sha256(text(directory, recorded).encode()).hexdigest(), recorded


def _plain(name: str) -> bool:
    """A relative path without empty, '.' or '..' parts: it stays inside the directory."""
    parts = name.split("/")
    return bool(name) and all(part not in ("", ".", "..") for part in parts)
