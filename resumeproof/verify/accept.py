"""What a finished trajectory proved before anything uses or compares it: its checkpoint and its summary.

A checkpoint file is accepted once its sha256 matches its sidecar and the torch-free weights_only
check passed (the real loader too, with --torch-load). A checkpoint directory is accepted once its
sidecar lists exactly the files it holds with their digests and every file is of a kind that
cannot run code when loaded, or was allowed explicitly (common/checkpoint_files.py). A summary is accepted
once it has the shape of the protocol's section 3 with the step the plan expects. Anything else
fails the trajectory: exit 2, never a comparison result.
"""

from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from resumeproof.common import fingerprint, manifest, protocol, runfiles, weights_only
from resumeproof.common.allowances import NONE_ALLOWED, Allowances
from resumeproof.common.checkpoint_files import FileInfo, classify, refusal
from resumeproof.common.errors import ResumeproofError
from resumeproof.common.protocol import CheckId, CheckKind
from resumeproof.verify.result import Check
from resumeproof.verify.settings import FLAT
from resumeproof.verify.summary import read_summary
from resumeproof.verify.trajectories import Trajectory, TrajectoryError

TORCH_FREE = "torch-free weights_only check"
TORCH_LOAD = "torch.load(weights_only=True)"


@dataclass(frozen=True)
class CheckpointInfo:
    path: Path
    sha256: str  # of the bytes on disk, equal to the sidecar's (a directory: of its sidecar's text)
    tensors: int
    checked_by: tuple[str, ...]  # the loaders that accepted it
    files: tuple[FileInfo, ...] = ()  # a directory's files, each classified

    def check(self, trajectory: str) -> Check:
        """The check verification.json lists for this checkpoint."""
        if self.files:
            kinds = Counter(f.kind for f in self.files)
            allowed = [f"{f.path} ({f.kind}, by {f.allowed_by})" for f in self.files if f.allowed_by]
            detail = f"{len(self.files)} files match the sidecar; " + ", ".join(f"{n} {k}" for k, n in kinds.items())
            detail += f"; allowed explicitly: {', '.join(allowed)}" if allowed else ""
        else:
            detail = f"sha256 matches; {self.tensors} tensors, plain data ({', '.join(self.checked_by)})"
        return Check(
            id=CheckId(kind=CheckKind.CHECKPOINT, trajectory=trajectory),
            name=f"checkpoint {trajectory}: fingerprint and weights_only",
            passed=bool(self.sha256) and bool(self.checked_by) and not any(f.refused for f in self.files),
            detail=detail,
        )

    def unchanged(self) -> bool:
        """The checkpoint still holds the bytes it was accepted with."""
        if self.files:
            try:
                return manifest.verify(self.path)[0] == self.sha256
            except manifest.ManifestError:
                return False
        return fingerprint.sha256_file(self.path) == self.sha256


@dataclass(frozen=True)
class Accepted:
    summary: dict[str, Any]
    checkpoint: CheckpointInfo


def checkpoint(path: Path, allow: Allowances = NONE_ALLOWED) -> CheckpointInfo:
    """Fingerprint, then the torch-free weights_only check (a directory: of every file it holds)."""
    if path.is_dir():
        return _directory(path, allow)
    if not path.is_file():
        raise TrajectoryError(f"{path}: missing")
    try:  # a file of ordinary size is read once: the bytes hashed are the bytes checked
        data = path.read_bytes() if path.stat().st_size <= weights_only.READ_WHOLE else None
        digest = fingerprint.verify(path, data)
        tensors = weights_only.check(path, data).tensors
    except ResumeproofError as err:
        raise TrajectoryError(str(err)) from None
    return CheckpointInfo(path, digest, tensors, (TORCH_FREE,))


def _directory(path: Path, allow: Allowances) -> CheckpointInfo:
    try:
        digest, digests = manifest.verify(path)
    except manifest.ManifestError as err:
        raise TrajectoryError(str(err)) from None
    files = tuple(classify(path / name, name, sha, allow) for name, sha in digests.items())
    refused = [f for f in files if f.refused]
    if refused:
        raise TrajectoryError(f"{path}/{refusal(refused[0])}")
    tensors = sum(f.tensors or 0 for f in files)
    return CheckpointInfo(path, digest, tensors, (TORCH_FREE,), files)


def accept(t: Trajectory, allow: Allowances = NONE_ALLOWED) -> Accepted:
    info = checkpoint(t.output / protocol.CHECKPOINT, allow)
    try:
        summary = read_summary(t.output / protocol.SUMMARY, t.reports_step)
    except protocol.ProtocolError as err:
        raise TrajectoryError(str(err)) from None
    if t.expectation is not None and t.expectation.generations:
        _check_generations(t.output, summary["step"])
    if t.expectation is not None and t.expectation.part not in (None, FLAT):
        _check_echo(t.output / protocol.SUMMARY, summary, t.expectation.part)
    return Accepted(summary, info)


def _check_echo(path: Path, summary: dict[str, Any], part: str) -> None:
    """A fault run must show that it ran the fault: a trainer that ignores --omit=PART would otherwise
    make a full resume pass for "a resume without PART", and the fault matrix would lie."""
    meta = summary.get("meta")
    echoed = meta.get("omitted") if isinstance(meta, dict) else None
    if echoed != [part]:
        raise TrajectoryError(
            f"{path}: ran with --omit={part} but meta.omitted is {echoed!r}, not [{part!r}]; "
            "a fault run must echo the parts it did not restore (docs/protocol.md)"
        )


def _check_generations(run: Path, steps: int) -> None:
    """Every generation the cadence run kept is valid, and the newest is the last step."""
    kept = runfiles.generations(run)
    if not kept or kept[0][0] != steps:
        raise TrajectoryError(f"{run}: no generation step_{steps:06d}.pt")
    for _, path in kept:
        checkpoint(path)


def with_torch(info: CheckpointInfo) -> CheckpointInfo:
    """The same checkpoint, loaded by torch itself as well (imports torch: about 1.3 s)."""
    from resumeproof.verify import torch_load  # the one opt-in path that imports torch

    paths = [info.path / f.path for f in info.files if f.kind == "torch"] if info.files else [info.path]
    try:
        for path in paths:
            torch_load.check_with_torch(path)
        for f in info.files:
            if f.kind == "dcp-data":  # every item of a DCP data file, as FileSystemReader loads it
                torch_load.check_dcp_data_file(info.path / f.path)
    except ResumeproofError as err:
        raise TrajectoryError(str(err)) from None
    return replace(info, checked_by=(*info.checked_by, TORCH_LOAD))
