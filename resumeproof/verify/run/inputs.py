"""What the resumes start from: the interrupted run's checkpoint, fingerprinted before any resume starts and checked
after all of them (a resume reads its input, never writes it), and with `--resume-from-run` each resume's own
copy of the interrupted run's folder, so that a script resuming from its output folder writes only its copy.
"""

import hashlib
import os
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from resumeproof.common.errors import ResumeproofError
from resumeproof.common.fingerprint import sha256_file
from resumeproof.verify.run.outputs import CheckpointInfo

FILE = ""  # the one key of a file checkpoint's digests: the checkpoint itself
WHILE = "while it was being resumed from"


class InputError(ResumeproofError):
    """A checkpoint that cannot be fingerprinted, or a run folder that cannot be copied: the trajectory fails."""


@dataclass(frozen=True)
class Fingerprint:
    """A checkpoint as it was before any resume started: every file under it (a file: itself) with its sha256."""

    path: Path
    digests: Mapping[str, str]  # relative path (FILE for a file checkpoint) -> sha256, or "symlink:TARGET"

    @property
    def sha256(self) -> str:
        """A file's digest; a directory's: of its `sha256sum` listing, sorted by path (common/manifest.py's form)."""
        if FILE in self.digests:
            return self.digests[FILE]
        listing = "".join(f"{self.digests[name]}  {self.path.name}/{name}\n" for name in sorted(self.digests))
        return hashlib.sha256(listing.encode()).hexdigest()


def take(path: Path) -> Fingerprint:
    """Fingerprint a script's checkpoint, a file or a directory of any files (no sidecar to trust)."""
    try:
        return Fingerprint(path, _digests(path))
    except OSError as err:
        raise InputError(f"{path}: cannot be fingerprinted ({err.strerror or err})") from None


def accepted(info: CheckpointInfo) -> Fingerprint:
    """A protocol checkpoint's fingerprint, as its admission checked it against its sidecar."""
    if info.files:
        return Fingerprint(info.path, {f.path: f.sha256 for f in info.files})
    return Fingerprint(info.path, {FILE: info.sha256})


def changed(taken: Iterable[Fingerprint]) -> str | None:
    """The first file of a fingerprinted checkpoint that differs now (its content, or written or removed since),
    as the error that names it; None when every one still holds what it held before the resumes."""
    for before in taken:
        try:
            now = _digests(before.path) if before.path.exists() or before.path.is_symlink() else {}
        except OSError as err:
            return f"{before.path}: unreadable after the resumes ({err.strerror or err}); a resume must not touch it"
        said = _difference(before, now)
        if said is not None:
            return said
    return None


def copy_run(source: Path, to: Path) -> None:
    """Copy the interrupted run's folder, metadata and all (links as links), to a resume's `{run}`: under a
    temporary name first, renamed into place once complete, so that the resume never sees half a copy."""
    if to.exists():
        raise InputError(f"{to}: exists; the copy of {source} must go to a fresh folder")
    tmp = to.with_name(f".{to.name}.copy-{os.getpid()}")
    try:
        shutil.copytree(source, tmp, symlinks=True, copy_function=shutil.copy2)
        tmp.rename(to)
    except OSError as err:
        raise InputError(f"cannot copy {source} to {to}: {err.strerror or err}") from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # after a failure; gone already once renamed


def _digests(path: Path) -> dict[str, str]:
    if not path.is_dir():
        return {FILE: sha256_file(path)}
    found = {}
    for item in sorted(path.rglob("*")):
        name = item.relative_to(path).as_posix()
        if item.is_symlink():  # a link is compared by where it points, never followed out of the checkpoint
            found[name] = f"symlink:{os.readlink(item)}"
        elif item.is_file():
            found[name] = sha256_file(item)
    return found


def _difference(before: Fingerprint, now: Mapping[str, str]) -> str | None:
    def named(name: str) -> Path:
        return before.path / name if name else before.path

    for name, digest in before.digests.items():
        if name not in now:
            return f"{named(name)}: removed {WHILE}"
        if now[name] != digest:
            return f"{named(name)}: changed {WHILE}"
    added = sorted(set(now) - set(before.digests))
    return f"{named(added[0])}: written {WHILE}" if added else None
