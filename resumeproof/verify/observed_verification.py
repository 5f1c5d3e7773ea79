"""One `verify --observe` verification: run the unmodified trainer's processes (verify/observed.py's plan), judge
them from the observer's records (verify/observed_judge.py), and build the `Verification` every report renders.
The command line turns its outcome into an exit code, as for a protocol trainer.
"""

from dataclasses import replace

from rich.console import Console

from resumeproof.common import observation
from resumeproof.common.errors import refuse_existing
from resumeproof.common.protocol import CONTINUOUS, FAULT_PREFIX, REPEAT, RESUMED_NO_RNG
from resumeproof.verify import environment, observed, observed_judge, terminal
from resumeproof.verify.findings import Check
from resumeproof.verify.plan import OBSERVED, point_names
from resumeproof.verify.result import Verification
from resumeproof.verify.trajectories import Trajectory, first_error
from resumeproof.verify.verification import record

Records = dict[str, dict[int | None, observation.Observation]]


def verify(s: observed.ObservedSettings, out: Console) -> Verification:
    refuse_existing(s.output)
    (s.output / "logs").mkdir(parents=True)
    (s.output / OBSERVED).mkdir()
    trajectories = observed.build(s)

    def resumes(done: Trajectory) -> list[Trajectory]:
        if done.observe is None or done.observe.stop is None:
            return []
        seen = observation.read_all(done.observe.record)
        return observed.resumes(s, done, observed.stopped_at(seen[min(seen, key=_rank_order)]))

    terminal.run_live(out, trajectories, s.jobs, s.timeout, lambda done: observed.accept(s, done), resumes)
    error = first_error(trajectories)
    result = _base(s, trajectories, error)
    if error is None:
        _judge(s, result, {t.name: observation.read_all(t.observe.record) for t in trajectories if t.observe})
    result.write(s.output / "verification.json")
    return result


def _judge(s: observed.ObservedSettings, result: Verification, records: Records) -> None:
    continuous = records[CONTINUOUS]
    result.determinism, check = observed_judge.determinism(continuous, records[REPEAT])
    checks: list[Check] = [check]
    for k in s.points:
        interrupted, resumed = point_names(k, k == s.primary)
        step = observed.stopped_at(records[interrupted][min(records[interrupted], key=_rank_order)])
        reference = continuous if result.determinism.deterministic else None
        restored = observed_judge.restore(records[interrupted], records[resumed], step, resumed, reference)
        checks += [restored] if restored is not None else []
        if result.determinism.deterministic:  # else not comparable: a run that differs from itself loses nothing
            result.resumes[resumed], check = observed_judge.resume(continuous, records[resumed], step, resumed)
            said = restored is not None and restored.diagnosis is not None  # the restore's check names it once
            checks.append(replace(check, diagnosis=None) if said else check)
    interrupted, resumed = point_names(s.primary, True)
    full, stopped = records[resumed], records[interrupted]
    step = observed.stopped_at(stopped[min(stopped, key=_rank_order)])
    if result.determinism.deterministic:
        result.negative, check = observed_judge.negative(continuous, records[RESUMED_NO_RNG], full, step)
        checks.append(check)
        for part in s.faults:
            faulty = records[f"{FAULT_PREFIX}{part}"]
            result.faults[part], check = observed_judge.fault(continuous, faulty, full, step, part)
            checks.append(check)
    result.checks = checks


def _base(s: observed.ObservedSettings, trajectories: list[Trajectory], error: str | None) -> Verification:
    return Verification(
        error=error,
        train_cmd=s.train_cmd,
        resume_cmd=s.resume_cmd,
        protocol=observation.FORMAT,
        steps=s.steps,
        interrupt_at=s.points,
        atol=0.0,
        allowed={"unsafe_pickle": [], "opaque": []},
        environment=environment.of({}),  # the verifier's; the trainer writes no meta to read its own from
        trajectories={t.name: record(t) for t in trajectories},
    )


def _rank_order(rank: int | None) -> int:
    return -1 if rank is None else rank
