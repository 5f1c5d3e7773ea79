"""The line worth quoting from a failed trajectory's log: the trainer's own error, or the rank that died.

A plain process usually says why it failed in its last line. A torchrun launch ends instead with
its failure summary (a traceback, then a box of `=` and `-` lines listing each rank's exit code),
whose "root cause" is the first failure torchrun observed: often a rank that only lost its peer.
So, in a torchrun log: a rank killed by a signal other than torchrun's own is the cause; a rank torchrun
had to SIGKILL because it did not answer SIGTERM hung (its peers timed out: quoted too); else the
error line a failed rank printed (`PROG [rank N]: error: ...`, what the kit's session prints), else
the rank and its exit status with the last exception line a worker printed.
"""

import os
import re
import signal
from dataclasses import dataclass
from pathlib import Path

TAIL = 64 * 1024  # bytes of the log read from its end
_DECORATION = re.compile(r"[=\-*_~#\s]*")
_GLOG = re.compile(r"[WEIF]\d{4} \d\d:\d\d:\d\d")  # torchrun's own log lines
_SLURM = re.compile(r"(?:srun|slurmstepd(?:-\S+)?): ")  # Slurm's own lines in a job's output ("srun: error: ...")
_ENTRY = re.compile(
    r"host\s*:\s*(?P<host>\S+)\s*\n\s*rank\s*:\s*(?P<rank>\d+)\s*\(local_rank:\s*(?P<local>\d+)\)\s*\n"
    r"\s*exitcode\s*:\s*(?P<code>-?\d+)\s*\(pid:\s*(?P<pid>\d+)\)"
)
_FORCED = re.compile(r"Unable to shutdown process (\d+) via")  # torchrun: SIGTERM unanswered, SIGKILL sent
_RANK_SAID = re.compile(r".*\[rank \d+\]: (?:error|failed): .*")
_EXCEPTION = re.compile(r"(?:\[rank\d+\]:\s*)?([A-Za-z_][\w.]*(?:Error|Exception|Interrupt)\b.*)")


@dataclass(frozen=True)
class Exit:
    host: str
    rank: int
    local_rank: int
    code: int  # negative: killed by that signal
    pid: int


def said(log: Path) -> str:
    """One informative line (at most 300 characters) from the end of `log`."""
    try:
        with open(log, "rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - TAIL))
            text = f.read().decode(errors="replace")
    except OSError:
        return ""
    found = _ENTRY.finditer(text)
    exits = [Exit(m["host"], int(m["rank"]), int(m["local"]), int(m["code"]), int(m["pid"])) for m in found]
    line = _launch(text, exits) if exits else _last(text.splitlines())
    return line[:300]


def _launch(text: str, exits: list[Exit]) -> str:
    lines = [line.strip() for line in text.splitlines()]
    forced = {int(pid) for pid in _FORCED.findall(text)}
    died = [e for e in exits if e.code < 0 and -e.code != signal.SIGTERM and e.pid not in forced]
    if died:
        e = died[0]
        return f"rank {e.rank} (local rank {e.local_rank}, pid {e.pid} on {e.host}) was killed by {_signal(-e.code)}"
    hung = [e for e in exits if e.pid in forced]
    if hung:
        e, said = hung[0], [line for line in lines if _RANK_SAID.fullmatch(line)]
        where = f"rank {e.rank} (local rank {e.local_rank}, pid {e.pid} on {e.host})"
        return f"{where} hung: torchrun killed it after SIGTERM went unanswered" + (f"; {said[0]}" if said else "")
    for e in sorted((e for e in exits if e.code > 0), key=lambda e: e.rank):
        own = [line for line in lines if f"[rank {e.rank}]: error:" in line]
        if own:
            return own[-1]
    failed = next((e for e in exits if e.code > 0), exits[0])
    worker = [m.group(1) for line in lines if not _GLOG.match(line) and (m := _EXCEPTION.fullmatch(line))]
    worker = [w for w in worker if "ChildFailedError" not in w]
    reason = f": {worker[-1]}" if worker else ""
    return f"rank {failed.rank} (local rank {failed.local_rank}) exited with status {failed.code}{reason}"


def _last(lines: list[str]) -> str:
    """The last line that says something: not blank, not a rule of `=` or `-`, not a launcher's log line (torchrun's,
    or Slurm's in a job's output, unless nothing else was said)."""
    for line in reversed(lines):
        line = line.strip()
        if line and not _DECORATION.fullmatch(line) and not _GLOG.match(line) and not _SLURM.match(line):
            return line
    return next((line.strip() for line in reversed(lines) if _SLURM.match(line.strip())), "")


def _signal(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
