"""One `verify --observe` verification: run the unmodified trainer's processes (verify/plan/script.py's plan), judge
them from the observer's records (verify/judge/script.py), and build the `Verification` every report renders.
The command line turns its outcome into an exit code, as for a protocol trainer.
"""

from dataclasses import replace

from rich.console import Console

from resumeproof.common import observation
from resumeproof.common.errors import refuse_existing
from resumeproof.common.protocol import CONTINUOUS, REPEAT, REPEATS
from resumeproof.verify.judge import recorded
from resumeproof.verify.judge import script as script_judge
from resumeproof.verify.plan import script as script_plan
from resumeproof.verify.plan.trainer import OBSERVED
from resumeproof.verify.report import terminal
from resumeproof.verify.report.result import CheckedCheckpoint, TrajectoryRecord, Verification, ran
from resumeproof.verify.run import environment, vet
from resumeproof.verify.run.trajectories import DONE, Trajectory, TrajectoryError, first_error
from resumeproof.verify.settings import Settings

TWO = (CONTINUOUS, REPEAT)  # the runs every verification repeats itself with


def verify(s: Settings, out: Console) -> Verification:
    refuse_existing(s.output)
    (s.output / "logs").mkdir(parents=True)
    (s.output / OBSERVED).mkdir()
    trajectories = script_plan.build(s)  # with --interrupt-at epochs, the continuous run and its repeat first
    error = _run(s, trajectories, out)
    if s.infer_points and error is None:
        s, error = _inferred(s, trajectories[0])
        if error is None:
            trajectories += script_plan.interrupted(s)
            error = _run(s, trajectories, out)
    if error is None and not s.require_deterministic and not _repeats_itself(s, trajectories):
        trajectories += [script_plan.reference(s, name) for name in REPEATS[1:]]  # the spread, measured
        error = _run(s, trajectories, out)
    records = {t.name: observation.read_all(t.observe.record) for t in trajectories if t.observe}
    if error is None:  # digests compare only between records made with the same fingerprints
        error = observation.comparable(seen for ranks in records.values() for seen in ranks.values())
    result = _base(s, trajectories, error)
    if error is None:
        result = result.judged(script_judge.evaluate(s, records))
    result.write(s.output / "verification.json")
    return result


def _run(s: Settings, trajectories: list[Trajectory], out: Console) -> str | None:
    """Run what is queued, each interrupted run followed by its resumes; the first reason one failed, if any."""

    def resumes(done: Trajectory) -> list[Trajectory]:
        if done.observe is None or done.observe.stop is None:
            return []
        return script_plan.resumes(s, done, _stopped(observation.read_all(done.observe.record)))

    terminal.run_live(out, trajectories, s.jobs, s.timeout, lambda done: script_plan.accept(s, done), resumes)
    return first_error(trajectories)


def _inferred(s: Settings, continuous: Trajectory) -> tuple[Settings, str | None]:
    """The settings with the points `--interrupt-at epochs` reads off the continuous run, or why it cannot."""
    assert continuous.observe is not None
    try:
        found = script_plan.epoch_points(s, observation.read_all(continuous.observe.record))
    except TrajectoryError as err:
        return s, str(err)
    return replace(s, points=found, infer_points=False), None


def _repeats_itself(s: Settings, trajectories: list[Trajectory]) -> bool:
    """Whether the continuous run and its repeat agree (within --atol): else the spread is to be measured."""
    read = {t.name: observation.read_all(t.observe.record) for t in trajectories if t.observe and t.name in TWO}
    return recorded.determinism(read[CONTINUOUS], read[REPEAT], s.atol)[0].deterministic is not False


def _base(s: Settings, trajectories: list[Trajectory], error: str | None) -> Verification:
    ran_as = {t.name: _record(s, t) for t in trajectories}
    # The verifier's environment: the trainer writes no meta to read its own from.
    return Verification.asked(s, observation.FORMAT, environment.of({}), ran_as, error)


def _record(s: Settings, t: Trajectory) -> TrajectoryRecord:
    """A process as it ran; for an interrupted run that left its checkpoint, what `check` says of that checkpoint,
    which the resumes loaded as the script's own (the verdict never rests on it)."""
    as_run = ran(t)
    if t.observe is None or t.observe.stop is None or t.status != DONE:
        return as_run
    found = vet.vet(script_plan.checkpoint_of(s, t.output, _stopped(observation.read_all(t.observe.record))))
    check = CheckedCheckpoint(str(found.path), str(found.verdict), found.line())
    return replace(as_run, checkpoint_files=tuple(f.entry() for f in found.files), check=check)


def _stopped(seen: dict[int | None, observation.Observation]) -> int:
    """The last update an interrupted run completed, from its first rank's record (the launcher's, if any)."""
    return script_plan.stopped_at(script_plan.first_rank(seen))
