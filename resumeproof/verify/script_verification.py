"""One `verify --observe` verification: run the unmodified trainer's processes (verify/plan/script.py's plan), judge
them from the observer's records (verify/judge/recorded.py), and build the `Verification` every report renders.
The command line turns its outcome into an exit code, as for a protocol trainer.
"""

from dataclasses import replace
from typing import TypeVar

from rich.console import Console

from resumeproof.common import observation
from resumeproof.common.errors import refuse_existing
from resumeproof.common.protocol import CONTINUOUS, FAULT_PREFIX, REPEAT, REPEATS, RESUMED_NO_RNG
from resumeproof.verify.judge import recorded, recorded_tiers
from resumeproof.verify.judge.findings import Check, Fault, Resume
from resumeproof.verify.plan import script as script_plan
from resumeproof.verify.plan.trainer import OBSERVED, point_names
from resumeproof.verify.report import terminal
from resumeproof.verify.report.result import CheckedCheckpoint, TrajectoryRecord, Verification, ran
from resumeproof.verify.run import environment, vet
from resumeproof.verify.run.trajectories import DONE, Trajectory, TrajectoryError, first_error
from resumeproof.verify.settings import Settings

Records = dict[str, dict[int | None, observation.Observation]]
TWO = (CONTINUOUS, REPEAT)  # the runs every verification repeats itself with
Observed = dict[int | None, observation.Observation]
Entry = TypeVar("Entry", Resume, Fault)


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
        _judge(s, result, records)
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


def _judge(s: Settings, result: Verification, records: Records) -> None:
    continuous = records[CONTINUOUS]
    result.determinism, check = recorded.determinism(continuous, records[REPEAT], s.atol)
    if all(name in records for name in REPEATS[1:]) and result.determinism.deterministic is False:
        _judge_within_spread(s, result, records, check)
        return
    checks: list[Check] = [check]
    # Within --atol the continuous run may repeat itself and still differ from itself in the last bits: its update
    # k+1 then differs from any resume's in every digest, and only the interrupted process's inputs tell a part.
    exact = result.determinism.deterministic is not False
    if s.atol > 0:  # bit for bit, the judgement above says it already
        exact = recorded.determinism(continuous, records[REPEAT], 0.0)[0].deterministic is not False
    for k in s.points:
        interrupted, resumed = point_names(k, k == s.primary)
        step = _stopped(records[interrupted])
        reference = continuous if result.determinism.deterministic and exact else None
        restored = recorded.restore(records[interrupted], records[resumed], step, resumed, reference)
        checks += [restored] if restored is not None else []
        if result.determinism.deterministic:  # else not comparable: a run that differs from itself loses nothing
            result.resumes[resumed], check = recorded.resume(continuous, records[resumed], step, resumed, s.atol)
            said = restored is not None and restored.diagnosis is not None  # the restore's check names it once
            checks.append(replace(check, diagnosis=None) if said or not exact else check)
    interrupted, resumed = point_names(s.primary, True)
    full, stopped = records[resumed], records[interrupted]
    step = _stopped(stopped)
    if result.determinism.deterministic:
        control, check = recorded.negative(continuous, records[RESUMED_NO_RNG], full, step, s.atol)
        result.negative, check = _inputs_only(exact, stopped, records[RESUMED_NO_RNG], step, control, check)
        checks.append(check)
        for part in s.faults:
            faulty = records[f"{FAULT_PREFIX}{part}"]
            fault, check = recorded.fault(continuous, faulty, full, step, part, s.atol)
            result.faults[part], check = _inputs_only(exact, stopped, faulty, step, fault, check)
            checks.append(check)
    result.checks = checks


def _inputs_only(
    exact: bool, stopped: Observed, run: Observed, k: int, entry: Entry, check: Check
) -> tuple[Entry, Check]:
    """A run that must diverge, diagnosed from the interrupted process's inputs where the continuous run is not
    exactly itself (within --atol): its update k+1 would blame every part on the last bits."""
    if exact:
        return entry, check
    at = recorded.restore(stopped, run, k, check.id.trajectory or "")
    why = at.diagnosis if at is not None and not at.passed else None
    return replace(entry, diagnosis=why), replace(check, diagnosis=why)


def _judge_within_spread(s: Settings, result: Verification, records: Records, check: Check) -> None:
    """A script that differs from itself: each resume by its restore and its trajectory within the measured spread,
    the negative control and the faults at their restore (verify/judge/recorded_tiers.py)."""
    band = recorded_tiers.measured({name: records[name] for name in (CONTINUOUS, *REPEATS)})
    result.determinism = replace(result.determinism, spread=band)
    name = "the script differs from itself: each resume is judged by its restore and its measured spread"
    checks: list[Check] = [replace(check, name=name, passed=True)]
    for k in s.points:
        interrupted, resumed = point_names(k, k == s.primary)
        step = _stopped(records[interrupted])
        restored = recorded.restore(records[interrupted], records[resumed], step, resumed)
        checks += [restored] if restored is not None else []
        result.resumes[resumed], check = recorded_tiers.resume(
            band, records[CONTINUOUS], records[resumed], step, resumed, restored
        )
        checks.append(check)
    interrupted = point_names(s.primary, True)[0]
    step, held = _stopped(records[interrupted]), records[interrupted]
    result.negative, check = recorded_tiers.negative(held, records[RESUMED_NO_RNG], step)
    checks.append(check)
    for part in s.faults:
        result.faults[part], check = recorded_tiers.fault(held, records[f"{FAULT_PREFIX}{part}"], step, part)
        checks.append(check)
    result.checks = checks


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
