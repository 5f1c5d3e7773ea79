"""What a finished trajectory proved before anything uses or compares it: its checkpoint and its summary.

A checkpoint is accepted once its sha256 matches its sidecar and the torch-free weights_only check
passed (the real loader too, with --torch-load); a summary once it has the shape of the protocol's
section 3 with the step the plan expects. Anything else fails the trajectory: exit 2, never a
comparison result.
"""

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from resumeproof.common import fingerprint, protocol, runfiles
from resumeproof.common.errors import ResumeproofError
from resumeproof.verify import weights_only
from resumeproof.verify.summary import read_summary
from resumeproof.verify.trajectories import Trajectory, TrajectoryError

TORCH_FREE = "torch-free weights_only check"
TORCH_LOAD = "torch.load(weights_only=True)"


@dataclass(frozen=True)
class CheckpointInfo:
    path: Path
    sha256: str  # of the bytes on disk, equal to the sidecar's
    tensors: int
    checked_by: tuple[str, ...]  # the loaders that accepted it

    def row(self, trajectory: str) -> dict[str, Any]:
        """The check verification.json lists for this checkpoint."""
        return {
            "name": f"checkpoint {trajectory}: fingerprint and weights_only",
            "passed": bool(self.sha256) and bool(self.checked_by),
            "max_abs_diff": None,
            "first_mismatch": None,
            "detail": f"sha256 matches; {self.tensors} tensors, plain data ({', '.join(self.checked_by)})",
        }


@dataclass(frozen=True)
class Accepted:
    summary: dict[str, Any]
    checkpoint: CheckpointInfo


def checkpoint(path: Path) -> CheckpointInfo:
    """Fingerprint, then the torch-free weights_only check."""
    if not path.is_file():
        raise TrajectoryError(f"{path}: missing")
    try:
        digest = fingerprint.verify(path)
        tensors = weights_only.check(path)
    except ResumeproofError as err:
        raise TrajectoryError(str(err)) from None
    return CheckpointInfo(path, digest, tensors, (TORCH_FREE,))


def accept(t: Trajectory) -> Accepted:
    info = checkpoint(t.output / protocol.CHECKPOINT)
    try:
        summary = read_summary(t.output / protocol.SUMMARY, t.reports_step)
    except protocol.ProtocolError as err:
        raise TrajectoryError(str(err)) from None
    if t.expectation is not None and t.expectation.generations:
        _check_generations(t.output, summary["step"])
    return Accepted(summary, info)


def _check_generations(run: Path, steps: int) -> None:
    """Every generation the cadence run kept is valid, and the newest is the last step."""
    kept = runfiles.generations(run)
    if not kept or kept[0][0] != steps:
        raise TrajectoryError(f"{run}: no generation step_{steps:06d}.pt")
    for _, path in kept:
        checkpoint(path)


def with_torch(info: CheckpointInfo) -> CheckpointInfo:
    """The same checkpoint, loaded by torch itself as well (imports torch: about 1.3 s)."""
    try:
        weights_only.check_with_torch(info.path)
    except ResumeproofError as err:
        raise TrajectoryError(str(err)) from None
    return CheckpointInfo(info.path, info.sha256, info.tensors, (*info.checked_by, TORCH_LOAD))
