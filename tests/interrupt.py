"""Ctrl-C pressed during a verification whose trainers never end (tests/trainers/hanging.py): what a launcher must
leave behind is nothing. Shared by the launchers' tests (local, Slurm through submitit, Ray)."""

import contextlib
import os
import shlex
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

from tests.helpers import REPO, TRAINERS

HANGING = shlex.join([sys.executable, "-B", str(TRAINERS / "hanging.py")])
# Two trajectories at once, each a trainer that never ends and a child it started: four processes to leave nothing of
ARGS = ("--steps", "4", "--interrupt-at", "2", "--jobs", "2", "--timeout", "300", "--train-cmd", HANGING)


def running(pid: int) -> bool:
    """True while `pid` exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


@contextlib.contextmanager
def ctrl_c_during_two_trainers(out: Path, *launcher: str, env: dict[str, str] | None = None) -> Iterator[list[int]]:
    """Verify the hanging trainer with `launcher`'s flags until both first trainers wrote their pids (theirs and their
    children's), press Ctrl-C as a terminal does, wait for the verifier to exit, and yield the four pids once they
    ended (or after 10 s); any still running is killed on the way out, so that a failing test leaves nothing either."""
    argv = [sys.executable, "-B", str(REPO / "verify_resume.py"), "--output", str(out), *ARGS, *launcher]
    proc = subprocess.Popen(
        argv,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # Ctrl-C as a terminal delivers it
    )
    files = [out / name / "pids" for name in ("continuous", "interrupted")]
    pids: list[int] = []
    try:
        waited = threading.Event()
        for _ in range(1200):  # both trainers started and wrote their pids (at most a minute)
            if all(f.is_file() and len(f.read_text().split()) == 2 for f in files):
                break
            waited.wait(0.05)
        pids = [int(pid) for f in files for pid in f.read_text().split()]
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=120)
        for _ in range(200):
            if not any(running(pid) for pid in pids):
                break
            waited.wait(0.05)
        yield pids
    finally:
        for pid in pids:  # only processes this test's trainers started, and only if still there
            if running(pid):
                os.kill(pid, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()
