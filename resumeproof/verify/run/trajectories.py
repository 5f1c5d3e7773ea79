"""Run trajectories as fresh processes: at most `jobs` at once, each after the ones it needs.

A `Launcher` (verify/run/launch/) runs each command: on this machine in its own session, so that a timeout kills
the trainer and anything it started, or as a scheduler's job. A trajectory whose command started more than once (a
scheduler's retry or requeue) is refused: it would be a resume nobody asked for. A trajectory's prerequisite steps
(such as exporting the file it resumes from) run first, through the same launcher, into the same log. A trajectory
counts as done only once `accept` has checked what it wrote; its dependents start only after that. Each process is
watched by the observer (common/observation.py) where the plan asks for its records.
"""

import os
import shlex
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from pathlib import Path

from resumeproof.common import observation
from resumeproof.common.errors import ResumeproofError
from resumeproof.verify.run import failure, inputs
from resumeproof.verify.run.launch import Launcher, LaunchError, Placement, Preempt
from resumeproof.verify.run.launch.local import Local
from resumeproof.verify.run.launch.preempt import Preempted
from resumeproof.verify.run.outputs import Accepted
from resumeproof.verify.vocabulary.expectation import Expectation
from resumeproof.verify.vocabulary.status import Status


@dataclass(frozen=True)
class Observe:
    """What the observer records in a trajectory's process: where, and which of its updates (counted from 1)."""

    record: Path  # without suffix: each rank of a torchrun group adds its own (observation.record_file)
    updates: frozenset[int] | str  # counted from 1, or as UPDATES_ENV writes them ("1-12")
    stop: tuple[str, int] | None = None  # end the process after update K (observation.STOP_ENV)
    block: tuple[str, ...] = ()  # the restores to make no-ops (observation.BLOCK_ENV)
    values: bool = False  # keep the compared state by value too, for a tolerance (observation.VALUES_ENV)
    pause: int | None = None  # a preempted job's first start: held after update K for Slurm (observation.PAUSE)


class TrajectoryError(ResumeproofError):
    """A trajectory did not complete, or what it wrote is unusable."""


@dataclass
class Outcome:
    """What became of a trajectory once it ran: filled in by `run_all`, read by the judge and the report."""

    status: Status = Status.QUEUED
    exit_code: int | None = None
    started: float | None = None
    seconds: float | None = None
    error: str | None = None
    accepted: Accepted | None = None  # what `accept` found, once the trajectory is done
    left: inputs.Fingerprint | None = None  # an interrupted script's checkpoint, before any resume started
    placement: Placement | None = None  # where its command ran (verify/run/launch/), once it ran
    run_key: dict[str, str] | None = None  # what makes another run of it the same run (verify/run/reuse.py)
    reused_from: Path | None = None  # --reuse-runs: the verification its run was copied from
    not_reused: str | None = None  # --reuse-runs: why it ran again
    preempted: Preempted | None = None  # --preempt: what happened to its job, once it ended


@dataclass(frozen=True)
class Trajectory:
    """One process the plan asks for, as planned (frozen: a plan's stage makes a new one with `replace`), and what
    became of it (`outcome`, the one part the run fills in)."""

    name: str
    argv: list[str]
    output: Path  # the directory the process writes (its --output)
    log: Path
    after: tuple[str, ...] = ()  # trajectories that must be done first
    prepare: tuple[tuple[str, ...], ...] = ()  # commands run before argv, in the same job and log
    planned: Expectation | None = None  # what the plan requires of it (None: the reference run)
    reports_step: int | None = None  # the step its summary must report (None: any)
    observe: Observe | None = None  # the observer's records it writes (common/observation.py), if any
    starts_from: Path | None = None  # a script's resume: the checkpoint its command names (verify/run/inputs.py)
    copy_of: Path | None = None  # --resume-from-run: the run folder copied to `output` before it starts
    preempt: Preempt | None = None  # --preempt: one requeueable job that Slurm preempts (verify/run/launch/preempt.py)
    outcome: Outcome = field(default_factory=Outcome, compare=False, init=False)  # replace() starts a new one

    @property
    def expectation(self) -> Expectation | None:
        """What it is judged by: as planned, except that a preempted job's end is a resume from where its restart
        went on (read off the job's starts once it ended)."""
        p = self.outcome.preempted
        if self.planned is None or p is None or not p.resumed_from:
            return self.planned
        return replace(self.planned, resumed_at=p.resumed_from[0])

    def environment(self) -> dict[str, str] | None:
        """Its process's environment: this one's, with the observer injected where it is asked for."""
        if self.observe is None:
            return None
        watch = self.observe
        stop = (observation.PAUSE, watch.pause) if watch.pause is not None else watch.stop
        return observation.environment(dict(os.environ), watch.record, watch.updates, stop, watch.block, watch.values)

    def elapsed(self) -> float:
        ran = self.outcome
        if ran.seconds is not None:
            return ran.seconds
        return time.perf_counter() - ran.started if ran.started is not None else 0.0


def run_all(
    trajectories: list[Trajectory],
    jobs: int,
    timeout: float,
    accept: Callable[[Trajectory], Accepted | None],
    refresh: Callable[[], None] = lambda: None,
    expand: Callable[[Trajectory], list[Trajectory]] = lambda done: [],
    launcher: Launcher | None = None,
    reused: Callable[[Trajectory], bool] = lambda t: False,
) -> None:
    """Run every trajectory whose dependencies are done; mark the rest skipped. `expand(done)` may add
    trajectories once one is accepted (they join `trajectories`): what they are depends on what it wrote.
    `launcher` (default: processes here) is closed on the way out, Ctrl-C and errors included. `reused(t)` is
    asked first: True where it put an earlier run of `t` in place (verify/run/reuse.py), accepted as if it ran."""
    launch = launcher or Local()
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        try:
            start = lambda t: pool.submit(_run, t, timeout, accept, launch, reused)  # noqa: E731
            _schedule(trajectories, jobs, start, refresh, expand)
        finally:
            launch.close()  # before the pool waits for its threads: a scheduler's jobs are cancelled, not awaited
    refresh()


def _schedule(
    trajectories: list[Trajectory],
    jobs: int,
    start: Callable[[Trajectory], Future],
    refresh: Callable[[], None],
    expand: Callable[[Trajectory], list[Trajectory]],
) -> None:
    """Start each trajectory once its dependencies are done and a job is free, until none is left."""
    by_name = {t.name: t for t in trajectories}
    pending, running = [t for t in trajectories if t.outcome.status == Status.QUEUED], dict[Future, Trajectory]()
    while pending or running:
        for t in list(pending):
            needs = [by_name[name].outcome.status for name in t.after]
            if any(status in (Status.FAILED, Status.SKIPPED) for status in needs):
                pending.remove(t)
                t.outcome.status, t.outcome.error = Status.SKIPPED, f"needs {', '.join(t.after)}"
            elif all(status == Status.DONE for status in needs) and len(running) < jobs:
                pending.remove(t)
                t.outcome.status, t.outcome.started = Status.RUNNING, time.perf_counter()
                running[start(t)] = t
        refresh()
        finished, _ = wait(running, timeout=0.1, return_when=FIRST_COMPLETED)
        for future in finished:
            t = running.pop(future)
            t.outcome.status = Status.DONE if future.result() is None else Status.FAILED
            added = expand(t) if t.outcome.status == Status.DONE else []
            trajectories += added
            pending += added
            by_name.update((a.name, a) for a in added)


def first_error(trajectories: list[Trajectory]) -> str | None:
    """Why the first trajectory that failed did (one skipped only follows another's failure); None: none failed."""
    return next((t.outcome.error for t in trajectories if t.outcome.error and t.outcome.status != Status.SKIPPED), None)


def _run(
    t: Trajectory,
    timeout: float,
    accept: Callable[[Trajectory], Accepted | None],
    launcher: Launcher,
    reused: Callable[[Trajectory], bool],
) -> str | None:
    """Run the prerequisite steps and the process to their end; None when accepted, else the reason."""
    ran = t.outcome
    try:
        if reused(t):
            ran.accepted = accept(t)
            return None
        t.log.write_bytes(b"")
        if t.copy_of is not None:
            inputs.copy_run(t.copy_of, t.output)
        for step in t.prepare:
            code = _launched(t, launcher, list(step), timeout, None)
            if code != 0:
                said = failure.said(t.log)
                raise TrajectoryError(f"prerequisite `{shlex.join(step)}` exited with status {code}: {said}")
        if t.preempt is not None:
            ran.exit_code = _preempted(t, launcher, timeout)
        else:
            ran.exit_code = _launched(t, launcher, t.argv, timeout, t.environment())
        if ran.exit_code != 0:
            said = failure.said(t.log)
            raise TrajectoryError(f"exited with status {ran.exit_code}{': ' + said if said else ''} (log: {t.log})")
        ran.accepted = accept(t)
    except (TrajectoryError, LaunchError, inputs.InputError) as err:
        ran.error = f"{t.name}: {err}"
    finally:
        ran.seconds = time.perf_counter() - (ran.started or time.perf_counter())
    return ran.error


def _launched(t: Trajectory, launcher: Launcher, argv: list[str], timeout: float, env: dict[str, str] | None) -> int:
    """One command of `t` run to its end by `launcher`: its exit code, once it is known to have started once."""
    ran = launcher.launch(argv, t.log, timeout, env)
    t.outcome.placement = ran.placement
    if ran.placement.attempts > 1:
        raise TrajectoryError(
            f"`{shlex.join(argv)}` started {ran.placement.attempts} times (job {ran.placement.job_id}: retried or "
            "requeued by the scheduler): a process that restarted is a resume, not the run it was planned as"
        )
    return ran.exit_code


def _preempted(t: Trajectory, launcher: Launcher, timeout: float) -> int:
    """`t`'s one job, preempted by Slurm and restarted (--preempt): its last start's exit code. Two starts that ran at
    once wrote one folder together: refused, never judged."""
    preempter = getattr(launcher, "preempted", None)
    if preempter is None or t.preempt is None:
        raise TrajectoryError("--preempt needs --launcher slurm: Slurm preempts the job")
    job = preempter(t.argv, t.log, t.output, timeout, t.environment(), t.preempt)
    t.outcome.preempted = job
    first = job.starts[0] if job.starts else None
    t.outcome.placement = Placement(
        launcher="slurm",
        host=first.host if first else None,
        job_id=job.job_id,
        attempts=len(job.starts),
        devices=first.devices or None if first else None,
        node=first.node or None if first else None,
    )
    both = next(((n, s.overlapping) for n, s in enumerate(job.starts, 1) if s.overlapping), None)
    if both is not None:
        raise TrajectoryError(
            f"start {both[0]} of job {job.job_id} began while an earlier start's command (pid {both[1]}) "
            f"still ran: two writers in {t.output}, refused, not judged"
        )
    return job.exit_code
