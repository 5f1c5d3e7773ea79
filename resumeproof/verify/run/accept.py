"""What a finished trajectory proved before anything uses or compares it: its checkpoint and its summary.

A checkpoint, a file or a directory, is accepted as verify/run/admission.py decides, with its sidecar
required. A summary is accepted once it has the shape of the protocol's section 3 with the step the
plan expects. Anything else fails the trajectory: exit 2, never a comparison result.
"""

from dataclasses import replace
from pathlib import Path

from resumeproof.common import observation, protocol, runfiles
from resumeproof.common.allowances import NONE_ALLOWED, Allowances
from resumeproof.common.errors import ResumeproofError
from resumeproof.common.protocol import FLAT
from resumeproof.verify.run import admission
from resumeproof.verify.run.outputs import Accepted, CheckpointInfo
from resumeproof.verify.run.summary import Summary, read_summary
from resumeproof.verify.run.trajectories import Trajectory, TrajectoryError

TORCH_FREE = "torch-free weights_only check"
TORCH_LOAD = "torch.load(weights_only=True)"


def checkpoint(path: Path, allow: Allowances = NONE_ALLOWED) -> CheckpointInfo:
    """Fingerprint, then the torch-free weights_only check (a directory: of every file it holds)."""
    if not path.is_dir() and not path.is_file():
        raise TrajectoryError(f"{path}: missing")
    try:
        found = admission.admit(path, allow, sidecar=True)
    except ResumeproofError as err:
        raise TrajectoryError(str(err)) from None
    if found.refusal is not None:
        raise TrajectoryError(found.refusal)
    assert found.sha256 is not None, "the sidecar is required"
    return CheckpointInfo(path, found.sha256, found.tensors, (TORCH_FREE,), found.files)


def accept(t: Trajectory, allow: Allowances = NONE_ALLOWED) -> Accepted:
    info = checkpoint(t.output / protocol.CHECKPOINT, allow)
    try:
        summary = read_summary(t.output / protocol.SUMMARY, t.reports_step)
    except protocol.ProtocolError as err:
        raise TrajectoryError(str(err)) from None
    if t.expectation is not None and t.expectation.generations:
        _check_generations(t.output, summary.step)
    if t.expectation is not None and t.expectation.part not in (None, FLAT):
        _check_echo(t.output / protocol.SUMMARY, summary, t.expectation.part)
    return Accepted(summary, info)


def halted(t: Trajectory) -> None:
    """A process the observer ended before an update's step (STOP_ENV `exit:K`): it leaves its records alone, which
    must be whole and say it was stopped there."""
    assert t.observe is not None and t.observe.stop is not None
    k = t.observe.stop[1]
    seen = observation.read_all(t.observe.record)
    if not seen:
        raise TrajectoryError("the observer recorded nothing: the process never stepped a torch optimizer")
    failed = next((o.failed for o in seen.values() if o.failed), None)
    if failed:
        raise TrajectoryError(f"the observer could not watch it: {failed}")
    if any(o.stopped != k for o in seen.values()):
        completed = sorted({o.completed for o in seen.values()}, key=str)
        raise TrajectoryError(f"it ended after {completed} updates, not stopped by the observer before update {k + 1}")


def _check_echo(path: Path, summary: Summary, part: str) -> None:
    """A fault run must show that it ran the fault: a trainer that ignores --omit=PART would otherwise
    make a full resume pass for "a resume without PART", and the fault matrix would lie."""
    echoed = summary.meta.get(protocol.META_OMITTED)
    if echoed != [part]:
        raise TrajectoryError(
            f"{path}: ran with {protocol.omit_token(part)} but meta.omitted is {echoed!r}, not [{part!r}]; "
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
    from resumeproof.verify.run import torch_load  # the one opt-in path that imports torch

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
