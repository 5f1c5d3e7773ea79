"""The chaos test: kill a long run at random instants, restart it every time, lose nothing.

A supervisor runs the training command (the bundled train.py, or any `--train-cmd` that supports
`--resume auto --until-step --checkpoint-every --pace`) on one run directory and, at seeded random instants
after the trainer reports that it is running, sends SIGKILL, SIGTERM or SIGUSR1. After each
death it checks that a valid generation exists (fingerprint and weights_only check, never the
file name) and restarts the trainer, until the run reaches its final step. Then the final
summary must be concordant with a continuous run, and loss.jsonl must hold exactly one
authoritative record per step, equal to the continuous history.

With `kill="rank"` the command is a torchrun launch with `--max-restarts`: the supervisor SIGKILLs
one worker rank (from the pids the group's start line lists) at each instant, torchrun restarts
the whole group, and the group resumes in place from the newest complete checkpoint.
"""

import os
import random
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from resumeproof.common import losslog, protocol, runfiles
from resumeproof.common.errors import ResumeproofError, refuse_existing
from resumeproof.common.protocol import CONTINUOUS, OUTPUT_FLAG, STEPS_FLAG, CheckId, CheckKind
from resumeproof.verify.chaos.result import ChaosResult, Kill
from resumeproof.verify.chaos.settings import RANK, ChaosSettings
from resumeproof.verify.judge.compare import summaries
from resumeproof.verify.run import accept
from resumeproof.verify.run.summary import read_summary
from resumeproof.verify.vocabulary.findings import Check

SIGNALS = (signal.SIGKILL, signal.SIGTERM, signal.SIGUSR1)
# torchrun's workers otherwise reuse the previous attempt's store without a prefix and a restarted
# group often fails to connect (pytorch#135712); with it, each attempt gets a store of its own.
RESTART_ENV = {"TORCH_DISABLE_SHARE_RDZV_TCP_STORE": "1"}
RECORD_KEYS = tuple(protocol.RECORD_KEYS)  # what every history record holds: step, rows, lr, loss


class ChaosError(ResumeproofError):
    """The chaos run could not be completed (exit 2)."""


@dataclass
class Outcome:
    kills: list[Kill] = field(default_factory=list)
    starts: int = 0
    seen_generation: bool = False  # once one was valid, one must be valid after every kill
    missing_generation: list[int] = field(default_factory=list)  # kills after which none was valid


def run(s: ChaosSettings) -> ChaosResult:
    refuse_existing(s.output)
    (s.output / "logs").mkdir(parents=True)
    reference = s.output / CONTINUOUS
    continuous = _start(s, [*s.train, STEPS_FLAG, str(s.steps), OUTPUT_FLAG, str(reference)], CONTINUOUS)
    chooser, outcome, run_dir = random.Random(s.seed), Outcome(), s.output / "run"
    while True:
        seen = len(losslog.read(run_dir / losslog.NAME)[0])  # a reused pid must not match an old start
        proc = _start(s, _trainer_argv(s, run_dir), f"run-{outcome.starts}")
        if s.kill == RANK:
            _strike_ranks(s, proc, run_dir, seen, chooser, outcome)
            if _final(run_dir, s.steps):
                break
            continue
        outcome.starts += 1
        if not _wait_until_running(run_dir, proc, seen, s.timeout):  # it ended before it could be signalled
            if proc.returncode != 0:
                raise ChaosError(f"trainer start {outcome.starts} exited {proc.returncode} (log: {_log(s, outcome)})")
            if _final(run_dir, s.steps):
                break
            continue
        while len(outcome.kills) < s.kills and proc.poll() is None:
            sig = chooser.choice(SIGNALS)
            phase = _aim(run_dir, proc, chooser, s.pace)
            if proc.poll() is not None:
                break
            proc.send_signal(sig)
            outcome.kills.append(Kill(signal=sig.name, phase=phase, step=_logged_step(run_dir)))
            if sig != signal.SIGUSR1:
                break
        if _wait(proc, s.timeout) != 0 and proc.returncode != -signal.SIGKILL:
            raise ChaosError(f"trainer start {outcome.starts} exited with {proc.returncode} (log: {_log(s, outcome)})")
        _check_generation(run_dir, outcome)
        if _final(run_dir, s.steps):
            break
    if _wait(continuous, s.timeout) != 0:
        raise ChaosError(f"the continuous reference run failed (log: {s.output / 'logs' / f'{CONTINUOUS}.log'})")
    return _report(s, outcome, run_dir, reference)


def _strike_ranks(
    s: ChaosSettings, proc: subprocess.Popen, run_dir: Path, seen: int, chooser: random.Random, outcome: Outcome
) -> None:
    """SIGKILL one worker rank per instant; torchrun restarts the group, which logs a new start line."""
    while True:
        started = _start_line(run_dir, proc, seen, s.timeout)
        if started is None:  # torchrun ended
            break
        outcome.starts += 1
        seen = len(losslog.read(run_dir / losslog.NAME)[0])
        if len(outcome.kills) >= s.kills:
            break
        # A restart costs seconds: let the group get 0 to 3 updates beyond its start, so that kills land
        # at many steps, and not all inside the first save of every restarted group.
        target = min(started["from_step"] + chooser.randint(0, 3), s.steps - 1)
        _until_step(run_dir, proc, seen, target, s.timeout)
        phase = _aim(run_dir, proc, chooser, s.pace)
        rank = chooser.randrange(len(started["workers"]))
        try:
            os.kill(started["workers"][rank], signal.SIGKILL)
        except ProcessLookupError:  # the group finished first
            break
        outcome.kills.append(Kill(signal="SIGKILL", phase=phase, step=_logged_step(run_dir), rank=rank))
        _check_generation(run_dir, outcome)
    if _wait(proc, s.timeout) != 0:
        raise ChaosError(
            f"torchrun exited with {proc.returncode} after {len(outcome.kills)} kills; it needs --max-restarts "
            f"of at least --kills (log: {s.output / 'logs' / 'run-0.log'})"
        )


def _until_step(run_dir: Path, proc: subprocess.Popen, seen: int, step: int, seconds: float) -> None:
    """Until an update at or beyond `step` is logged after entry `seen` (or the process ends)."""
    deadline = time.monotonic() + seconds
    while proc.poll() is None and time.monotonic() < deadline:
        logged = [e["step"] for e in losslog.read(run_dir / losslog.NAME)[0][seen:] if "loss" in e]
        if max(logged, default=-1) >= step:
            return
        time.sleep(0.005)


def _check_generation(run_dir: Path, outcome: Outcome) -> None:
    if _valid_newest(run_dir) is not None:
        outcome.seen_generation = True
    elif outcome.seen_generation:
        outcome.missing_generation.append(len(outcome.kills))


def _trainer_argv(s: ChaosSettings, run_dir: Path) -> list[str]:
    return [
        *s.train,
        *(protocol.UNTIL_STEP_FLAG, str(s.steps), OUTPUT_FLAG, str(run_dir), protocol.RESUME_FLAG, protocol.AUTO),
        *(protocol.CHECKPOINT_EVERY_FLAG, str(s.checkpoint_every), protocol.PACE_FLAG, str(s.pace)),
    ]


def _start(s: ChaosSettings, argv: list[str], name: str) -> subprocess.Popen:
    with open(s.output / "logs" / f"{name}.log", "wb") as log:
        env = {**os.environ, **RESTART_ENV}
        return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env)


def _log(s: ChaosSettings, outcome: Outcome) -> Path:
    return s.output / "logs" / f"run-{outcome.starts - 1}.log"


def _wait(proc: subprocess.Popen, timeout: float) -> int:
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise ChaosError(f"a trainer (pid {proc.pid}) ran past --timeout {timeout:g} s and was killed") from None


def _wait_until_running(run_dir: Path, proc: subprocess.Popen, seen: int, timeout: float) -> bool:
    """Until this process has logged its start (after start-up, right before its loop)."""
    return _start_line(run_dir, proc, seen, timeout) is not None and proc.poll() is None


def _aim(run_dir: Path, proc: subprocess.Popen, chooser: random.Random, pace: float) -> str:
    """Wait for the instant to strike: inside a checkpoint write, or at a random moment of training. Where
    the run really is then ("writing" or "training") is what the report states."""
    if chooser.choice(("training", "writing")) == "writing":  # wait for a write to be in flight
        _until_writing(run_dir, proc, 2 * pace + 1.0)
    else:
        time.sleep(chooser.uniform(0, 1.5 * pace))
    return "writing" if _writing(run_dir) else "training"


def _start_line(run_dir: Path, proc: subprocess.Popen, seen: int, timeout: float) -> dict[str, Any] | None:
    """The first start line after `seen` logged by this process or by a worker it launched (torchrun's
    rank 0 names its parent); None if the process ended first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        entries = losslog.read(run_dir / losslog.NAME)[0][seen:]
        started = [e for e in entries if e.get("event") == "start" and proc.pid in (e.get("pid"), e.get("parent"))]
        if started:
            return started[0]
        if proc.poll() is not None:
            return None
        time.sleep(0.01)
    raise ChaosError(f"trainer pid {proc.pid} did not start within {timeout:g} s")


def _until_writing(run_dir: Path, proc: subprocess.Popen, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not _writing(run_dir) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.0005)


def _writing(run_dir: Path) -> bool:
    """A checkpoint write is in flight while its temporary file exists."""
    return any(runfiles.TEMPORARY.fullmatch(p.name) for p in run_dir.iterdir())


def _logged_step(run_dir: Path) -> int:
    return max((e["step"] for e in losslog.read(run_dir / losslog.NAME)[0] if "loss" in e), default=0)


def _valid_newest(run_dir: Path) -> Path | None:
    """The newest generation that passes the fingerprint and the weights_only check (a directory: its
    sidecar and every file's kind, a DCP one its `.metadata` and every item)."""
    for _, path in runfiles.generations(run_dir):
        try:
            accept.checkpoint(path)
            return path
        except ResumeproofError:
            continue
    return None


def _final(run_dir: Path, steps: int) -> bool:
    try:
        return read_summary(run_dir / protocol.SUMMARY).step == steps
    except protocol.ProtocolError:
        return False


def _report(s: ChaosSettings, outcome: Outcome, run_dir: Path, reference: Path) -> ChaosResult:
    final, cont = (read_summary(d / protocol.SUMMARY) for d in (run_dir, reference))
    concordance = summaries(cont, final, 1e-12)
    entries, broken = losslog.read(run_dir / losslog.NAME)
    records = losslog.authoritative(run_dir / losslog.NAME)
    expected = {r["step"]: {k: r[k] for k in RECORD_KEYS} for r in cont.history}
    log_ok = {step: {k: r[k] for k in RECORD_KEYS} for step, r in records.items()} == expected
    checks = (
        _check("final summary concordant with continuous", concordance.concordant, concordance.first_path),
        _check("loss.jsonl: one authoritative record per step, equal to continuous", log_ok),
        _check("a valid generation after every kill", not outcome.missing_generation),
        _check(f"all {s.kills} signals delivered", len(outcome.kills) == s.kills),
    )
    return ChaosResult(
        checks=checks,
        first_mismatch=concordance.first_path,
        kills=tuple(outcome.kills),
        trainer_starts=outcome.starts,
        replayed_steps=sum(1 for e in entries if e.get(losslog.REPLAY)),
        broken_log_lines=broken,
        kills_without_valid_generation=tuple(outcome.missing_generation),
        settings=s.record(),
    )


def _check(name: str, passed: bool, first_mismatch: str | None = None) -> Check:
    return Check(id=CheckId(kind=CheckKind.CHAOS), name=name, passed=passed, first_mismatch=first_mismatch)
