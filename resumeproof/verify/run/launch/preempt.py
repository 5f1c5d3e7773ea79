"""A preempted trajectory (--preempt): one requeueable Slurm job, preempted after update K the way a cluster does it.

The job is the batch script a user writes: `sbatch --requeue`, the command once under `srun` (one task, so that a
framework that detects Slurm from its variables sees an ordinary job), its output appended to the trajectory's log
by every start. Once the command's loss.jsonl logs update K, Slurm is told to preempt it: `signal` delivers the
job's --signal (`scancel --signal`, to the steps, or with B: to the batch shell, which passes it on as a user's trap
does) and the job must save and requeue itself; `requeue` runs `scontrol requeue` (SIGTERM, KillWait, back in the
queue), what PreemptMode=REQUEUE does, and the job must save on SIGTERM. The hold Slurm puts on a requeued job (its
BeginTime, until `cred_expire` passes) is released at once where Slurm lets the user; the job is followed to its end.
What happened is recorded as Slurm and the job's own starts say it (`Preempted`); verify/judge/preemption.py judges it.
"""

import shlex
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, replace
from pathlib import Path

from resumeproof.common import losslog, observation
from resumeproof.verify.run.launch import job
from resumeproof.verify.run.launch.seam import REQUEUE, SIGNAL, Launch, LaunchError, Preempt

POLL = 0.2  # seconds between two looks at the job and its loss.jsonl
GRACE = 2.0  # seconds a held script stays held once Slurm was told: its signal lands between two updates
MOST_RESTARTS = 3  # a job Slurm restarted more often than this is cancelled: one restart is what was asked for
ENDED = {"BOOT_FAIL", "CANCELLED", "COMPLETED", "DEADLINE", "FAILED", "NODE_FAIL", "OUT_OF_MEMORY", "TIMEOUT"}
LEFT = "LEFT_THE_QUEUE"  # scontrol no longer knows the job (MinJobAge passed): its end state is unknown


@dataclass(frozen=True)
class Preempted:
    """A preempted trajectory's job, followed to its end: how and when Slurm was told to preempt it, what Slurm says
    of it at its end, and each start of its command (job.Start: its node, restart count, two writers)."""

    how: str  # SIGNAL or REQUEUE
    signal: str  # sbatch's --signal, as given: B:USR1@90
    at: int  # the update it was to be preempted after (--interrupt-at)
    job_id: str
    delivered_after: int | None  # the last update its loss.jsonl held when Slurm was told (None: it ended first)
    state: str  # Slurm's JobState at its end
    restarts: int  # Slurm's Restarts
    exit_code: int  # of its last start's command, as Slurm reports it
    starts: tuple[job.Start, ...]
    holds: tuple[str, ...] = ()  # per requeue, how its BeginTime hold ended: "released", or why scontrol would not
    # What its loss.jsonl says: the update its first process stopped after and on which signal (None: no stop
    # logged), whether the job requeued itself (a `requeue` line), and the update each later start continued from.
    stopped_after: int | None = None
    stopped_by: str | None = None
    requeued_itself: bool = False
    resumed_from: tuple[int, ...] = ()


class Preempter:
    """Submits preempted trajectories' jobs to the cluster `launch` names; `close` cancels every one still known."""

    def __init__(self, launch: Launch, folder: Path) -> None:
        self.asked = launch
        self.folder = folder
        self._jobs: set[str] = set()
        self._lock = threading.Lock()
        self._closed = threading.Event()

    def run(
        self, argv: list[str], log: Path, output: Path, timeout: float, env: dict[str, str] | None, plan: Preempt
    ) -> Preempted:
        """Submit `argv` as one requeueable job, preempt it after update `plan.at` of `output`'s loss.jsonl, and
        follow it, restarts included, to its end (cancelled past `timeout` seconds, or on `close`)."""
        if self._closed.is_set():
            raise LaunchError("cancelled before it was submitted")
        self.folder.mkdir(parents=True, exist_ok=True)
        starts = self.folder / f"{uuid.uuid4().hex}.starts"
        job_id = self._submit(argv, log, starts, env, plan)
        with self._lock:
            self._jobs.add(job_id)
        try:
            return self._follow(job_id, output, starts, time.monotonic() + timeout, plan)
        finally:
            with self._lock:
                self._jobs.discard(job_id)
            if plan.held is not None:  # never leave a process held, whatever happened
                _release_hold(plan.held)

    def close(self) -> None:
        self._closed.set()
        with self._lock:
            running = list(self._jobs)
        for job_id in running:
            _slurm("scancel", job_id)

    def _submit(self, argv: list[str], log: Path, starts: Path, env: dict[str, str] | None, plan: Preempt) -> str:
        script = self.folder / f"{starts.stem}.sh"
        script.write_text(batch_script(argv, log, starts, plan))
        options = ["--parsable", "--requeue", "--job-name=resumeproof-preempted", "--nodes=1", "--ntasks=1"]
        options += [f"--output={str(log).replace('%', '%%')}", "--open-mode=append"]
        if plan.how == SIGNAL:
            options.append(f"--signal={plan.signal}")
        if self.asked.partition is not None:
            options.append(f"--partition={self.asked.partition}")
        if self.asked.minutes is not None:
            options.append(f"--time={self.asked.minutes}")
        if self.asked.gpus_per_node:
            options.append(f"--gpus-per-node={self.asked.gpus_per_node}")
        done = _slurm("sbatch", *options, str(script), env=env)
        if done.returncode != 0:
            raise LaunchError(f"could not be submitted: sbatch: {_said(done)}")
        return done.stdout.strip().split(";")[0]

    def _follow(self, job_id: str, output: Path, starts: Path, deadline: float, plan: Preempt) -> Preempted:
        """Preempt the job once update `plan.at` is logged, release each requeue's hold, and wait for an end that
        follows the last restart (a state read between a requeue and the restart says nothing of the restart)."""
        delivered: int | None = None
        held_at, holds, cancelled, release_at = 0, list[str](), False, None
        while True:
            fields = shown(job_id)
            state, restarts = fields.get("JobState", LEFT), int(fields.get("Restarts", "0"))
            if delivered is None and state == "RUNNING" and (reached := _reached(output, plan)) is not None:
                delivered = reached
                _preempt(job_id, plan)
                release_at = time.monotonic() + GRACE
            if plan.held is not None and release_at is not None and time.monotonic() >= release_at:
                _release_hold(plan.held)
                release_at = None
            if state == "PENDING" and restarts > held_at:
                held_at = restarts
                holds.append(_release(job_id))
            restarted = restarts == 0 or held_at == restarts or len(job.started(str(starts))) > restarts
            if state == LEFT or (state in ENDED and restarted):
                break
            if restarts > MOST_RESTARTS and not cancelled:  # requeued again and again: once is what was asked for
                _slurm("scancel", job_id)
                cancelled = True
            if self._closed.is_set() or time.monotonic() > deadline:
                _slurm("scancel", job_id)
                raise LaunchError(f"job {job_id} {'cancelled' if self._closed.is_set() else 'timed out'}")
            time.sleep(POLL)
        if delivered is None:  # nothing was preempted: there is no course to judge
            raise LaunchError(_not_preempted(job_id, state, output, plan))
        code, ran = int(fields.get("ExitCode", "0:0").split(":")[0]), tuple(job.started(str(starts)))
        slurm = Preempted(plan.how, str(plan.signal), plan.at, job_id, delivered, state, restarts, code, ran)
        return course(replace(slurm, holds=tuple(holds)), output)


def _not_preempted(job_id: str, state: str, output: Path, plan: Preempt) -> str:
    """Why a job that ended before update `plan.at` was never preempted, where its progress is read."""
    if plan.held is not None:
        said = f"its first start never reached update {plan.at} (the observer's records: {plan.held}*)"
        return f"job {job_id} ended ({state}) before update {plan.at}: {said}; nothing was preempted"
    logged = f"{output / losslog.NAME} logged update {last_update(output)}"
    return (
        f"job {job_id} ended ({state}) before update {plan.at} was logged ({logged}): nothing was preempted; "
        "--preempt follows the updates a trainer logs there (docs/cluster.md)"
    )


def batch_script(argv: list[str], log: Path, starts: Path, plan: Preempt) -> str:
    """The job's script: this directory, then the command once under srun through job.py's patient start; with a
    B: signal the batch shell passes the signal on to the step, as a user's trap does."""
    signals = ",".join(str(n) for n in sorted({plan.signal.number, 15}))  # and SIGTERM: a requeue's, KillWait's
    start = [sys.executable, "-B", job.__file__, job.PATIENT, signals, str(log), str(starts), "--", *argv]
    step = shlex.join(["srun", "--ntasks=1", *start])
    lines = ["#!/bin/bash", f"cd {shlex.quote(str(Path.cwd()))}"]
    if not plan.signal.batch:
        return "\n".join([*lines, step, ""])
    name = plan.signal.name
    forward = [f"trap 'kill -s {name} \"$step\" 2>/dev/null' {name}", f"{step} &", "step=$!"]
    wait = ['wait "$step"; code=$?', 'while kill -0 "$step" 2>/dev/null; do wait "$step"; code=$?; done', "exit $code"]
    return "\n".join([*lines, *forward, *wait, ""])


def course(slurm: Preempted, output: Path) -> Preempted:
    """`slurm` with what the job's loss.jsonl says: where its first process stopped, whether it requeued itself,
    where each later start continued from."""
    events = [e for e in losslog.read(output / losslog.NAME)[0] if "event" in e]
    stop = next((e for e in events if e["event"] == "stop"), None)
    return replace(
        slurm,
        stopped_after=stop["step"] if stop else None,
        stopped_by=stop["signal"] if stop else None,
        requeued_itself=any(e["event"] == "requeue" for e in events),
        resumed_from=tuple(e["from_step"] for e in events if e["event"] == "start")[1:],
    )


def shown(job_id: str) -> dict[str, str]:
    """`scontrol show job`'s fields ({} once Slurm no longer knows the job)."""
    done = _slurm("scontrol", "show", "job", job_id, "--oneliner")
    return dict(field.split("=", 1) for field in done.stdout.split() if "=" in field) if done.returncode == 0 else {}


def _reached(output: Path, plan: Preempt) -> int | None:
    """The update the job's first start is at once it has made update `plan.at`: held there by the observer (a
    script's), or logged in its loss.jsonl (a protocol trainer's); None before."""
    if plan.held is not None:
        marker = next(plan.held.parent.glob(f"{plan.held.name}*{observation.PAUSED}"), None)
        return int(marker.read_text() or plan.at) if marker is not None else None
    logged = last_update(output)
    return logged if logged >= plan.at else None


def _release_hold(held: Path) -> None:
    Path(f"{held}{observation.RELEASE}").touch()


def last_update(output: Path) -> int:
    """The last update the trajectory's loss.jsonl logged (0: none yet)."""
    return max((e["step"] for e in losslog.read(output / losslog.NAME)[0] if "loss" in e), default=0)


def _preempt(job_id: str, plan: Preempt) -> None:
    """Tell Slurm to preempt the job `plan.how`; LaunchError with Slurm's words where it refuses."""
    sig = plan.signal
    argv = ["scontrol", "requeue", job_id] if plan.how == REQUEUE else ["scancel", f"--signal={sig.name}", job_id]
    if plan.how == SIGNAL and sig.batch:
        argv.insert(1, "--batch")
    done = _slurm(*argv)
    if done.returncode != 0:
        raise LaunchError(f"job {job_id}: `{shlex.join(argv)}` failed: {_said(done)}")


def _release(job_id: str) -> str:
    """End the hold Slurm puts on a requeued job (its BeginTime): "released", or what scontrol said instead (a
    cluster may not let a user move a job's start forward; the job then starts once the hold passes)."""
    done = _slurm("scontrol", "update", f"JobId={job_id}", "StartTime=now")
    return "released" if done.returncode == 0 else _said(done)


def _slurm(*argv: str, env: dict[str, str] | None = None) -> "subprocess.CompletedProcess[str]":
    """A Slurm client's answer; a client that is missing or hangs answers as a failed one would."""
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env)
    except (OSError, subprocess.TimeoutExpired) as err:
        return subprocess.CompletedProcess(argv, 1, "", str(err))


def _said(done: "subprocess.CompletedProcess[str]") -> str:
    lines = [line.strip() for line in (done.stderr or done.stdout).splitlines() if line.strip()]
    return lines[-1] if lines else f"exit status {done.returncode}"
