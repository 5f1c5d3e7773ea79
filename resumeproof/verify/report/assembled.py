"""A verification's result assembled from what ran and what the judge found, once every round ran
(verify/verification.py): the last checks that can stop it (a resume that wrote its input, a restore that did not
complete, records made with other fingerprints, --torch-load), then the `Verification` every report renders.

A protocol trainer's: the environment its summaries report, the parts it declares, each checkpoint's check, the
evaluation of its last round; a script's (`--observe`): the verifier's environment, each resume's input, what
`resumeproof check` says of each interrupted run's checkpoint, and the judgement of the observer's records.
"""

from dataclasses import replace

from resumeproof.common import observation, protocol
from resumeproof.common.protocol import CONTINUOUS, CheckKind
from resumeproof.verify.judge.asked import summaries_of
from resumeproof.verify.judge.records import applies
from resumeproof.verify.judge.records import script as script_judge
from resumeproof.verify.plan import script as script_plan
from resumeproof.verify.report.result import CheckedCheckpoint, StartedFrom, TrajectoryRecord, Verification, ran
from resumeproof.verify.run import accept, environment, inputs, vet
from resumeproof.verify.run.trajectories import Trajectory, TrajectoryError, first_error
from resumeproof.verify.settings import Settings
from resumeproof.verify.vocabulary.expectation import Expect
from resumeproof.verify.vocabulary.findings import Evaluated
from resumeproof.verify.vocabulary.status import Status


def of_trainer(
    s: Settings, trajectories: list[Trajectory], evaluated: Evaluated | None, error: str | None
) -> Verification:
    """A protocol trainer's result: judged where every restore completed and nothing failed."""
    if error is None:
        error = _restores_failed(trajectories) or (_torch_load_all(trajectories) if s.subject.torch_load else None)
    error = _inputs_unchanged(trajectories) or error  # a resume that wrote its input: the likely cause of any failure
    summaries = summaries_of(trajectories)
    ran_as = {t.name: ran(t) for t in trajectories}
    result = Verification.asked(s, protocol.PROTOCOL, environment.of(summaries), ran_as, error)
    declared = summaries[CONTINUOUS].declared_parts if CONTINUOUS in summaries else None
    result = replace(result, parts=declared or ())
    if error is not None or evaluated is None:
        return result
    checkpoints = [t.outcome.accepted.checkpoint.check(t.name) for t in trajectories if t.outcome.accepted is not None]
    result = result.judged(evaluated, checkpoints)
    if s.subject.plot:
        from resumeproof.verify.report import plot

        divergent = {t.name for t in trajectories if t.expectation and t.expectation.kind is Expect.DIVERGENT}
        result.plot = str(plot.write(s.output / "verification.png", summaries, s.atol, divergent))
    return result


def of_script(
    s: Settings, trajectories: list[Trajectory], evaluated: Evaluated | None, error: str | None
) -> Verification:
    """A script's result: the judge's evaluation of its records, where they compare (made with the same
    fingerprints) and no resume wrote its input."""
    records = script_judge.read(s, trajectories)
    written = {t.name: said for t in trajectories if t.outcome.left and (said := inputs.changed([t.outcome.left]))}
    error = next(iter(written.values()), None) or error  # a resume wrote its input: the likely cause of any failure
    if error is None:  # digests compare only between records made with the same fingerprints
        error = observation.incomparable(seen for ranks in records.values() for seen in ranks.values())
    left = {t.name: t.outcome.left for t in trajectories if t.outcome.left is not None}
    ran_as = {t.name: _record(s, t, left, t.name in written, records) for t in trajectories}
    # The verifier's environment: the trainer writes no meta to read its own from.
    result = Verification.asked(s, observation.FORMAT, environment.of({}), ran_as, error)
    if error is None:
        assert evaluated is not None, "records that compare are judged in the last round (judge/asked.py)"
        result = result.judged(evaluated)
        result.continuous_made = applies.overran(records[CONTINUOUS], s.steps)
    return result


def _restores_failed(trajectories: list[Trajectory]) -> str | None:
    """A resume of 0 updates is the proof of a restore (judge/summaries/tiers.py): one that did not complete
    leaves the verification without it."""
    twins = [t for t in trajectories if t.expectation and t.expectation.id.kind is CheckKind.RESTORE]
    return first_error(twins)


def _inputs_unchanged(trajectories: list[Trajectory]) -> str | None:
    """A resume must read its checkpoint, never write it: re-hash every one resumed from, file by file, against the
    digests it was accepted with before its resumes started; the first file that differs is named."""
    resumed_from = {name for t in trajectories for name in t.after}
    taken = [
        ran.accepted.checkpoint
        for t in trajectories
        if t.name in resumed_from and (ran := t.outcome).accepted is not None
    ]
    return inputs.changed(inputs.accepted(info) for info in taken)


def _torch_load_all(trajectories: list[Trajectory]) -> str | None:
    """Load every checkpoint with torch itself; the first refusal, if any."""
    for t in trajectories:
        if (ran := t.outcome).accepted is not None:
            try:
                ran.accepted = replace(ran.accepted, checkpoint=accept.with_torch(ran.accepted.checkpoint))
            except TrajectoryError as err:
                ran.error = f"{t.name}: {err}"
                return ran.error
    return None


def _record(
    s: Settings, t: Trajectory, left: dict[str, inputs.Fingerprint], written: bool, records: script_judge.Records
) -> TrajectoryRecord:
    """A process as it ran; for a resume, what it started from; for an interrupted run that left its checkpoint,
    what `check` says of that checkpoint, which the resumes loaded as the script's own (the verdict never rests
    on it), unless a resume wrote into it (the error names the file)."""
    as_run = ran(t)
    if t.starts_from is not None:
        return replace(as_run, started_from=_started_from(t, left))
    if (
        t.observe is None or t.observe.stop is None or t.outcome.status != Status.DONE or written
    ):  # written: no one's input now
        return as_run
    stopped = script_plan.stopped(records[t.name])  # read once, in verify
    found = vet.vet(script_plan.checkpoint_of(s, t.output, stopped), advise=False)  # --observe takes no --allow-*
    check = CheckedCheckpoint(str(found.path), str(found.verdict), found.line())
    return replace(as_run, checkpoint_files=found.files, check=check)


def _started_from(t: Trajectory, left: dict[str, inputs.Fingerprint]) -> StartedFrom:
    """A resume's input, its checkpoint fingerprinted before any resume started."""
    source = left.get(t.after[0]) if t.after else None
    return StartedFrom(
        checkpoint=str(t.starts_from),
        copy_of=str(t.copy_of) if t.copy_of is not None else None,
        sha256=source.sha256 if source is not None else None,
    )
