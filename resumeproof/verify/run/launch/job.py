"""What a scheduler's job runs: one command line, its output appended to the trajectory's log, each start counted.

Standard library only: submitit's job imports it (it unpickles `run` by reference), Ray's job runs it as a file.
Every start appends a line to the `starts` file first, so that a job the scheduler ran twice (a requeue, a retry)
says so whatever the scheduler reports.

A preempted trajectory's job (`--preempt`, verify/run/launch/preempt.py) runs `patient`: there the scheduler's
signals are for the command (it must save, and requeue itself), so the job neither kills the command on them nor
dies of them, and each start says whether an earlier start's command was still running (two writers in one folder).
"""

import os
import signal
import socket
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import BinaryIO

CANNOT_START = 127  # the shell's exit status for a command it cannot find
SLURM_NODE = "SLURMD_NODENAME"  # Slurm's name of the node a job's task runs on: need not be its host name
SLURM_RESTART = "SLURM_RESTART_COUNT"  # how many times Slurm restarted the job (unset on its first start)
PATIENT = "--patient"  # job.py's own flag, before LOG: run as a preempted trajectory's job
# What a trajectory's environment changes in the one it starts from: variables set, variables removed. Only the
# changes travel: the node's own (Slurm's SLURM_*, the CUDA_VISIBLE_DEVICES of its allocation) stay the node's.
Changes = tuple[dict[str, str], tuple[str, ...]]


def changes(env: dict[str, str], base: dict[str, str]) -> Changes:
    """What `env` sets or removes relative to `base`."""
    return {k: v for k, v in env.items() if base.get(k) != v}, tuple(k for k in base if k not in env)


def changed(base: dict[str, str], made: Changes) -> dict[str, str]:
    """`base` with `made` applied."""
    set_, removed = made
    return {**{k: v for k, v in base.items() if k not in removed}, **set_}


def run(argv: list[str], log: str, changes: Changes | None, starts: str) -> int:
    """Run `argv` to its end in the job's environment with `changes` made; its exit code. A cancelled job (SIGINT,
    SIGTERM) kills the command's session first, wherever the interrupt lands once the command has started."""
    env = None if changes is None else changed(dict(os.environ), changes)
    devices = (env if env is not None else os.environ).get("CUDA_VISIBLE_DEVICES", "")
    _mark(starts, devices, "")
    main = threading.current_thread() is threading.main_thread()  # as in a job; a test may call it from a thread
    # submitit only logs a SIGTERM: the command must end too. The caller's handler is put back (a test's process).
    before = signal.signal(signal.SIGTERM, _interrupt) if main else None
    proc = None
    try:
        with open(log, "ab") as out:
            try:
                proc = _start(argv, out, env)
            except OSError as err:  # no such command on the node, not executable: said in the log as a shell would
                out.write(f"cannot start {argv[0]!r} on {socket.gethostname()}: {err.strerror or err}\n".encode())
                return CANNOT_START
            return proc.wait()
    finally:
        if proc is not None and proc.poll() is None:  # cancelled, or timed out by the scheduler: nothing left behind
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        if main:
            signal.signal(signal.SIGTERM, before)


def patient(argv: list[str], log: str, starts: str, signals: tuple[int, ...]) -> int:
    """Run `argv` to its end as a preempted job's start: `signals` (the job's --signal, the requeue's SIGTERM) are
    the command's to handle, so this process only notes them; the command stays in this process group, where any
    proctrack plugin signals it; the start's line says which earlier start's command still runs on this machine."""
    _mark(starts, os.environ.get("CUDA_VISIBLE_DEVICES", ""), ",".join(map(str, still_running(starts))))
    for signum in signals:  # a handler, not SIG_IGN: the command gets the default dispositions back at its exec
        signal.signal(signum, lambda *_: None)
    with open(log, "ab") as out:
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
        except OSError as err:
            out.write(f"cannot start {argv[0]!r} on {socket.gethostname()}: {err.strerror or err}\n".encode())
            return CANNOT_START
    with open(f"{starts}.pids", "a") as pids:
        pids.write(f"{socket.gethostname()}\t{proc.pid}\n")
    return proc.wait()


def still_running(starts: str) -> list[int]:
    """The pids of earlier starts' commands still running on this machine (/proc: Linux; none known elsewhere)."""
    here, alive = socket.gethostname(), []
    try:
        with open(f"{starts}.pids") as pids:
            lines = [line.rstrip("\n").split("\t") for line in pids if line.strip()]
    except FileNotFoundError:
        return []
    for host, pid in lines:
        if host == here and Path(f"/proc/{pid}").exists() and _state(pid) not in ("Z", "X"):
            alive.append(int(pid))
    return alive


def _state(pid: str) -> str:
    """A process's state letter from /proc (Z: a zombie, ended)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "X"


def _mark(starts: str, devices: str, overlapping: str) -> None:
    """One start's line: the machine, its devices, Slurm's node name and restart count (empty elsewhere), and the
    earlier starts' commands still running."""
    node, restart = os.environ.get(SLURM_NODE, ""), os.environ.get(SLURM_RESTART, "")
    with open(starts, "a") as mark:
        mark.write(f"{socket.gethostname()}\t{devices}\t{node}\t{restart}\t{overlapping}\n")


def _start(argv: list[str], out: BinaryIO, env: dict[str, str] | None) -> "subprocess.Popen[bytes]":
    """`argv` in a session of its own (a cancel kills all it started), its output into `out`."""
    return subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, env=env
    )


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


@dataclass(frozen=True)
class Start:
    """One start of a job's command: the machine's host name, its CUDA_VISIBLE_DEVICES, Slurm's name of the node and
    restart count, and the pids of earlier starts' commands still running then (comma-separated; empty: none)."""

    host: str
    devices: str
    node: str
    restart: str = ""
    overlapping: str = ""


def started(starts: str) -> list[Start]:
    """Each start, in order."""
    try:
        with open(starts) as mark:
            return [Start(*line.rstrip("\n").split("\t", 4)) for line in mark if line.strip()]
    except FileNotFoundError:
        return []


def main(args: list[str]) -> int:
    """`python job.py LOG STARTS [UNSET ...] -- ARGV...`: what a scheduler that runs a command line (not a pickled
    function: Ray's Jobs API) runs. Run as a file, not a module, so that the node needs no resumeproof on its path;
    the variables the trajectory sets come in the job's environment, the names it removes before `--`.
    `python job.py --patient SIGNUM[,SIGNUM...] LOG STARTS -- ARGV...`: a preempted trajectory's start (`patient`)."""
    split = args.index("--")
    if args[0] == PATIENT:
        signals = tuple(int(signum) for signum in args[1].split(","))
        return patient(args[split + 1 :], args[2], args[3], signals)
    (log, starts, *unset), argv = args[:split], args[split + 1 :]
    made: Changes | None = ({}, tuple(unset)) if unset else None
    return run(argv, log, made, starts)


if __name__ == "__main__":
    import sys

    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:  # stopped (SIGTERM): the command already killed in `run`
        sys.exit(128 + signal.SIGTERM)
