"""Whether a checkpoint file or directory may be loaded: the one decision behind the verifier's trajectories
(verify/run/accept.py: the sidecar required, a refusal raised) and `resumeproof check` (verify/run/vet.py: the sidecar
verified when present, a verdict).

A file is held to its sidecar and to the torch-free weights_only check, on the same bytes. A directory is
held to its sidecar, which must list exactly the files it holds with their digests, and every file is
classified by its bytes (common/checkpoint_files.py): a kind that can run code when loaded, or whose
kind cannot be told, is refused unless allowed by name.
"""

from dataclasses import dataclass
from pathlib import Path

from resumeproof.common import fingerprint, manifest, weights_only
from resumeproof.common.allowances import Allowances
from resumeproof.common.checkpoint_files import FileInfo, classify, refusal

EMPTY = "an empty directory holds no checkpoint"


@dataclass(frozen=True, kw_only=True)
class Admitted:
    """What the decision found; a directory with a refused file (or none at all) carries its refusal."""

    sha256: str | None  # as the sidecar records it (a directory: of the sidecar's text); None without one
    tensors: int = 0
    files: tuple[FileInfo, ...] = ()  # a directory's files, each classified
    refusal: str | None = None  # why the directory is refused, one line naming the file; None: accepted


def admit(path: Path, allow: Allowances, *, sidecar: bool, advise: bool = True) -> Admitted:
    """Decide on `path`, a file or a directory; with `sidecar`, its sidecar is verified (a missing one is a
    refusal). A file refused by the check or by its sidecar, or a directory by its sidecar, raises
    FingerprintError (ManifestError) or WeightsOnlyError naming it; an OSError is left to the caller. Without
    `advise`, a refusal names no --allow-* option (common/checkpoint_files.refusal)."""
    return _directory(path, allow, sidecar, advise) if path.is_dir() else _file(path, sidecar)


def _file(path: Path, sidecar: bool) -> Admitted:
    # A file of ordinary size is read once: the bytes hashed are the bytes checked.
    data = path.read_bytes() if path.stat().st_size <= weights_only.READ_WHOLE else None
    digest = fingerprint.verify(path, data) if sidecar else None
    return Admitted(sha256=digest, tensors=weights_only.check(path, data).tensors)


def _directory(path: Path, allow: Allowances, sidecar: bool, advise: bool) -> Admitted:
    if sidecar:
        digest, digests = manifest.verify(path)
    else:
        digest, digests = None, {name: fingerprint.sha256_file(path / name) for name in manifest.files(path)}
    files = tuple(classify(path / name, name, sha, allow) for name, sha in digests.items())
    refused = [f for f in files if f.refused]
    if refused:
        return Admitted(sha256=digest, files=files, refusal=f"{path}/{refusal(refused[0], advise)}")
    if not files:  # only without a sidecar: a sidecar lists at least one file
        return Admitted(sha256=digest, refusal=EMPTY)
    return Admitted(sha256=digest, tensors=sum(f.tensors or 0 for f in files), files=files)
