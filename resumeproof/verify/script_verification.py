"""One `verify --observe` verification: run the unmodified trainer's processes (verify/plan/script.py's plan), judge
them from the observer's records (verify/judge/script.py), and build the `Verification` every report renders.
The command line turns its outcome into an exit code, as for a protocol trainer.
"""

from dataclasses import replace
from pathlib import Path

from rich.console import Console

from resumeproof.common import observation
from resumeproof.common.errors import refuse_existing
from resumeproof.common.protocol import CONTINUOUS, REPEAT, REPEATS
from resumeproof.verify.judge import applies, preemption, recorded
from resumeproof.verify.judge import script as script_judge
from resumeproof.verify.plan import checkpoints
from resumeproof.verify.plan import script as script_plan
from resumeproof.verify.plan.trainer import OBSERVED
from resumeproof.verify.report import terminal
from resumeproof.verify.report.result import CheckedCheckpoint, TrajectoryRecord, Verification, ran
from resumeproof.verify.run import environment, inputs, reuse, vet
from resumeproof.verify.run.launch import LAUNCHES, launcher_for
from resumeproof.verify.run.trajectories import DONE, Trajectory, TrajectoryError, first_error, run_all
from resumeproof.verify.settings import Settings, SettingsError

TWO = (CONTINUOUS, REPEAT)  # the runs every verification repeats itself with


def verify(s: Settings, out: Console) -> Verification:
    refuse_existing(s.output)
    (s.output / "logs").mkdir(parents=True)
    (s.output / OBSERVED).mkdir()
    trajectories = script_plan.build(s)  # with --interrupt-at epochs, the continuous run and its repeat first
    error = _run(s, trajectories, out)
    if s.deferred and error is None:
        s, error = _inferred(s, trajectories[0])
        if error is None:
            trajectories += script_plan.interrupted(s)
            error = _run(s, trajectories, out)
    if error is None and not s.require_deterministic and not _repeats_itself(s, trajectories):
        trajectories += [script_plan.reference(s, name) for name in REPEATS[1:]]  # the spread, measured
        error = _run(s, trajectories, out)
    records = {t.name: observation.read_all(t.observe.record) for t in trajectories if t.observe}
    records |= _courses(s, trajectories, records)
    written = {t.name: said for t in trajectories if t.left and (said := inputs.changed([t.left]))}
    error = next(iter(written.values()), None) or error  # a resume wrote its input: the likely cause of any failure
    if error is None:  # digests compare only between records made with the same fingerprints
        error = observation.comparable(seen for ranks in records.values() for seen in ranks.values())
    result = _base(s, trajectories, error, set(written), records)
    if error is None:
        result = result.judged(script_judge.evaluate(s, trajectories, records))
        result.continuous_made = applies.overran(records[CONTINUOUS], s.steps)
    result.write(s.output / "verification.json")
    return result


def _run(s: Settings, trajectories: list[Trajectory], out: Console) -> str | None:
    """Run what is queued, each interrupted run followed by its resumes; the first reason one failed, if any."""

    def resumes(done: Trajectory) -> list[Trajectory]:
        if done.observe is None or done.observe.stop is None:
            return []
        return script_plan.resumes(s, done, script_judge.stopped(observation.read_all(done.observe.record)))

    accept, launcher = (lambda done: script_plan.accept(s, done)), launcher_for(s.launch, s.output / LAUNCHES)
    reused = reuse.reuser(s.reuse_runs, s.output, s.launch)
    with terminal.live(out, trajectories) as shown:
        run_all(trajectories, s.jobs, s.timeout, accept, shown, resumes, launcher, reused)
    return first_error(trajectories)


def _courses(s: Settings, trajectories: list[Trajectory], records: script_judge.Records) -> script_judge.Records:
    """A preempted job's course read off its records (verify/judge/preemption.py), kept with the job's record; its
    restart's records, by their own name."""
    restarts: dict[str, script_judge.Observed] = {}
    for t in trajectories:
        if t.preempted is not None and t.observe is not None and t.name in records:
            base = observation.restarted(str(t.observe.record), {observation.RESTART_ENV: "1"})
            restart = observation.read_all(Path(base))
            t.preempted = preemption.course(t.preempted, records[t.name], restart or None, s.steps)
            restarts |= {preemption.RESTART: restart} if restart else {}
    return restarts


def _inferred(s: Settings, continuous: Trajectory) -> tuple[Settings, str | None]:
    """The settings with what is read off the continuous run, or why it cannot be: with --epochs its N and updates
    per epoch; the points of `--interrupt-at epochs` or `checkpoints` (given points: that {epoch} can name them)."""
    assert continuous.observe is not None
    seen = observation.read_all(continuous.observe.record)
    try:
        s = checkpoints.measured(s, script_plan.first_rank(seen))
        if s.from_checkpoints:
            s = replace(s, points=checkpoints.points(s, continuous.output), from_checkpoints=False)
        elif s.infer_points:
            s = replace(s, points=script_plan.epoch_points(s, seen), infer_points=False)
        checkpoints.at_epoch_ends(s)
    except (TrajectoryError, SettingsError) as err:
        return s, str(err)
    return s, None


def _repeats_itself(s: Settings, trajectories: list[Trajectory]) -> bool:
    """Whether the continuous run and its repeat agree (within --atol): else the spread is to be measured."""
    read = {t.name: observation.read_all(t.observe.record) for t in trajectories if t.observe and t.name in TWO}
    return recorded.determinism(read[CONTINUOUS], read[REPEAT], s.atol)[0].deterministic is not False


def _base(
    s: Settings, trajectories: list[Trajectory], error: str | None, written: set[str], records: script_judge.Records
) -> Verification:
    left = {t.name: t.left for t in trajectories if t.left is not None}
    ran_as = {t.name: _record(s, t, left, t.name in written, records) for t in trajectories}
    # The verifier's environment: the trainer writes no meta to read its own from.
    return Verification.asked(s, observation.FORMAT, environment.of({}), ran_as, error)


def _record(
    s: Settings, t: Trajectory, left: dict[str, inputs.Fingerprint], written: bool, records: script_judge.Records
) -> TrajectoryRecord:
    """A process as it ran; for a resume, what it started from; for an interrupted run that left its checkpoint,
    what `check` says of that checkpoint, which the resumes loaded as the script's own (the verdict never rests
    on it), unless a resume wrote into it (the error names the file)."""
    as_run = ran(t)
    if t.starts_from is not None:
        return replace(as_run, started_from=_started_from(t, left))
    if t.observe is None or t.observe.stop is None or t.status != DONE or written:  # written: no one's input now
        return as_run
    stopped = script_judge.stopped(records[t.name])  # read once, in verify
    found = vet.vet(script_plan.checkpoint_of(s, t.output, stopped), advise=False)  # --observe takes no --allow-*
    check = CheckedCheckpoint(str(found.path), str(found.verdict), found.line())
    return replace(as_run, checkpoint_files=tuple(f.entry() for f in found.files), check=check)


def _started_from(t: Trajectory, left: dict[str, inputs.Fingerprint]) -> dict[str, str | None]:
    """A resume's input: the checkpoint its command named, the folder it is a copy of (--resume-from-run), and the
    interrupted run's checkpoint's sha256 as fingerprinted before any resume started."""
    source = left.get(t.after[0]) if t.after else None
    return {
        "checkpoint": str(t.starts_from),
        "copy_of": str(t.copy_of) if t.copy_of is not None else None,
        "sha256": source.sha256 if source is not None else None,
    }
