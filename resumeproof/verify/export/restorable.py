"""The copy proven restorable: a fresh process of the training command resumes from the copy as it came back from
DEST and runs one update; that update is compared bit for bit (atol 0, docs/protocol.md section 4) with the
reference: one update resumed from the same point in RUN, run beside it, or, for a point of a verification, the
continuous run's next update (its history record: rows, lr, loss).

The processes run as the verifier runs trajectories (verify/run/trajectories.py), and what they wrote is accepted
as it accepts a trajectory's (verify/run/accept.py): the checkpoint's fingerprint and weights_only check, the
summary's shape and step. A copy the trainer refuses is a failed check; a reference that fails is an export
that could not complete.
"""

from dataclasses import dataclass
from pathlib import Path

from resumeproof.common.errors import ResumeproofError
from resumeproof.common.protocol import HISTORY, OUTPUT_FLAG, RESUME_FLAG, STEPS_FLAG, CheckKind
from resumeproof.verify.export.result import ExportCheck
from resumeproof.verify.export.source import Command, Source
from resumeproof.verify.judge.compare import Comparison, compare, summaries
from resumeproof.verify.run import accept
from resumeproof.verify.run.summary import Summary
from resumeproof.verify.run.trajectories import Trajectory, run_all

FROM_RUN, FROM_COPY = "from-run", "from-copy"  # the processes, their output folders and logs under the work folder
BIT_FOR_BIT = 0.0


class ReferenceFailed(ResumeproofError):
    """The reference update could not be made: the proof cannot complete."""


@dataclass(frozen=True, kw_only=True)
class Resumed:
    """What the resumes wrote: the summary of the one from the copy (None where the copy was refused, and why),
    and of the one from RUN (None for a verification's point: the continuous run holds its reference)."""

    from_copy: Summary | None
    refused: str | None = None
    from_run: Summary | None = None


def prove(src: Source, command: Command, copy: Path, work: Path, timeout: float) -> ExportCheck:
    """Resume once from `copy` (the export as it came back) and compare its update with the reference."""
    return judge(src, resume(src, command, copy, work, timeout))


def resume(src: Source, command: Command, copy: Path, work: Path, timeout: float) -> Resumed:
    """One update from the copy of the newest point and, for a run, one from the point in RUN, side by side."""
    point = src.points[0]
    starts = {FROM_COPY: copy / point.path}
    if src.reference is None:
        starts[FROM_RUN] = src.run / point.path
    runs = {name: _trajectory(command, name, start, work, point.step + 1) for name, start in starts.items()}
    run_all(list(runs.values()), jobs=len(runs), timeout=timeout, accept=accept.accept)
    reference = runs.get(FROM_RUN)
    if reference is not None and reference.outcome.accepted is None:
        raise ReferenceFailed(f"the reference update could not be made: {reference.outcome.error}")
    resumed = runs[FROM_COPY]
    return Resumed(
        from_copy=resumed.outcome.accepted.summary if resumed.outcome.accepted else None,
        refused=resumed.outcome.error,
        from_run=reference.outcome.accepted.summary if reference is not None and reference.outcome.accepted else None,
    )


def judge(src: Source, resumed: Resumed) -> ExportCheck:
    """The update from the copy against the reference: atol 0 over everything a summary compares, or, against
    the continuous run, over its history up to the next update."""
    step = src.points[0].step + 1
    if resumed.from_copy is None:
        return _check(src, False, f"the copy was refused: {resumed.refused}")
    if resumed.from_run is not None:
        found = summaries(resumed.from_run, resumed.from_copy, BIT_FOR_BIT)
    else:
        expected = src.reference.history[:step] if src.reference is not None else []
        found = compare(expected, resumed.from_copy.history, BIT_FOR_BIT, HISTORY)
    return _check(src, found.concordant, _said(found, step))


def _trajectory(command: Command, name: str, start: Path, work: Path, step: int) -> Trajectory:
    argv = [*command.argv, STEPS_FLAG, "1", OUTPUT_FLAG, str(work / name), RESUME_FLAG, str(start)]
    (work / "logs").mkdir(parents=True, exist_ok=True)
    return Trajectory(name, argv, work / name, work / "logs" / f"{name}.log", reports_step=step)


def _said(found: Comparison, step: int) -> str:
    if found.concordant:
        return f"update {step} identical"
    first = found.mismatches[0]
    counted = f"{found.count} mismatch{'es' if found.count > 1 else ''}"
    return f"update {step} differs: {counted}, first {first.path} ({first.reason})"


def _check(src: Source, passed: bool, detail: str) -> ExportCheck:
    point = src.points[0]
    against = "the continuous run's next update" if src.reference is not None else f"one resumed from RUN/{point.path}"
    return ExportCheck(
        kind=CheckKind.RESTORABLE,
        name=f"one update resumed from the copy equals {against}, bit for bit",
        passed=passed,
        path=point.path,
        detail=detail,
    )
