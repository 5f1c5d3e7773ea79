"""The parent: hands case numbers to worker processes, kills and restarts one that hangs or dies, tallies verdicts."""

import json
import os
import selectors
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
REPO = TESTS.parent
MEMORY = 3 << 30  # RLIMIT_AS of a worker: torch itself maps about 0.7 GB


@dataclass(frozen=True)
class Outcome:
    index: int
    kind: str
    ours: str  # accept, refuse, foreign:<exception>, hang, crash
    torch: str  # accept, refuse, hang, crash
    ours_s: float = 0.0
    torch_s: float = 0.0
    marker: bool = False


@dataclass
class _Worker:
    proc: subprocess.Popen
    index: int | None = None
    phase: str = ""
    deadline: float = 0.0
    buffer: bytes = b""


def run(seed: int, cases: int, jobs: int, timeout: float = 30.0, first: int = 0) -> list[Outcome]:
    """Judge cases first .. first+cases-1 of `seed` on `jobs` workers; one Outcome per case."""
    with tempfile.TemporaryDirectory(prefix="wo-fuzz-") as directory:
        return _Pool(seed, Path(directory), jobs, timeout).run(range(first, first + cases))


class _Pool:
    def __init__(self, seed: int, directory: Path, jobs: int, timeout: float) -> None:
        self.seed, self.directory, self.jobs, self.timeout = seed, directory, jobs, timeout
        self.selector = selectors.DefaultSelector()
        self.outcomes: list[Outcome] = []

    def run(self, indices: range) -> list[Outcome]:
        pending = list(reversed(indices))
        workers = [self._start() for _ in range(min(self.jobs, len(indices)))]
        for worker in workers:
            self._feed(worker, pending)
        while any(worker.index is not None for worker in workers):
            for key, _ in self.selector.select(timeout=0.5):
                self._read(key.data, pending)
            for i, worker in enumerate(workers):
                if worker.index is None:
                    continue
                if time.monotonic() > worker.deadline:
                    what = "hang"
                elif worker.proc.poll() is not None:
                    what = "crash"
                else:
                    continue
                self._lost(worker, what)
                workers[i] = self._start()
                self._feed(workers[i], pending)
        for worker in workers:
            self._stop(worker)
        return sorted(self.outcomes, key=lambda o: o.index)

    def _start(self) -> _Worker:
        path = str(REPO)  # the package and tests.fuzz
        env = {**os.environ, "PYTHONPATH": path, "OMP_NUM_THREADS": "1", "PYTHONHASHSEED": "0"}  # cases.py says why
        proc = subprocess.Popen(
            [sys.executable, "-B", "-m", "tests.fuzz.judge", str(self.seed), str(self.directory), str(MEMORY)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=self.directory,
            env=env,
        )
        worker = _Worker(proc)
        os.set_blocking(proc.stdout.fileno(), False)  # type: ignore[union-attr]
        self.selector.register(proc.stdout, selectors.EVENT_READ, worker)  # type: ignore[arg-type]
        return worker

    def _feed(self, worker: _Worker, pending: list[int]) -> None:
        worker.index = pending.pop() if pending else None
        if worker.index is None:
            return
        worker.phase, worker.deadline = "start", time.monotonic() + self.timeout * 4  # includes importing torch
        try:
            worker.proc.stdin.write(f"{worker.index}\n".encode())  # type: ignore[union-attr]
            worker.proc.stdin.flush()  # type: ignore[union-attr]
        except BrokenPipeError:
            pass  # noticed as a crash by the loop

    def _read(self, worker: _Worker, pending: list[int]) -> None:
        chunk = os.read(worker.proc.stdout.fileno(), 1 << 16)  # type: ignore[union-attr]
        worker.buffer += chunk
        while b"\n" in worker.buffer:
            line, worker.buffer = worker.buffer.split(b"\n", 1)
            message = json.loads(line)
            if "phase" in message:
                worker.phase, worker.deadline = message["phase"], time.monotonic() + self.timeout
                continue
            fields = {k: v for k, v in message.items() if k != "i"}
            self.outcomes.append(Outcome(index=message["i"], **fields))
            self._feed(worker, pending)

    def _lost(self, worker: _Worker, what: str) -> None:
        """The worker hung or died while judging its case: charged to the side that was running."""
        ours, theirs = (what, "not run") if worker.phase in ("start", "ours") else ("refuse?", what)
        self.outcomes.append(Outcome(index=worker.index or 0, kind="?", ours=ours, torch=theirs))
        self._stop(worker)

    def _stop(self, worker: _Worker) -> None:
        self.selector.unregister(worker.proc.stdout)  # type: ignore[arg-type]
        if worker.proc.poll() is None:
            worker.proc.kill()
        worker.proc.wait()
        for stream in (worker.proc.stdin, worker.proc.stdout):
            if stream:
                stream.close()


# -- the report ---------------------------------------------------------------------------------------


def summary(outcomes: list[Outcome]) -> dict[str, Counter]:
    """Per kind: how many cases fell in each cell of the confusion table."""
    table: dict[str, Counter] = {}
    for o in outcomes:
        where = cell(o)
        table.setdefault(o.kind, Counter())[where] += 1
        table.setdefault("all", Counter())[where] += 1
    return table


def cell(o: Outcome) -> str:
    if o.marker:
        return "marker created"
    if o.ours.startswith("foreign") or o.ours in ("hang", "crash"):
        return "our failure"
    if o.ours == "accept":
        return "both accept" if o.torch == "accept" else "ours accepts, torch refuses"
    return "ours refuses, torch accepts" if o.torch == "accept" else "both refuse"


COLUMNS = (
    "both accept",
    "both refuse",
    "ours refuses, torch accepts",
    "ours accepts, torch refuses",
    "our failure",
    "marker created",
)


def table_text(outcomes: list[Outcome]) -> str:
    table = summary(outcomes)
    lines = ["| kind | cases | " + " | ".join(COLUMNS) + " |", "|---" * (len(COLUMNS) + 2) + "|"]
    for kind in sorted(table, key=lambda k: (k == "all", k)):
        row = table[kind]
        lines.append(f"| {kind} | {sum(row.values())} | " + " | ".join(str(row[c]) for c in COLUMNS) + " |")
    return "\n".join(lines)


def times_text(outcomes: list[Outcome]) -> str:
    ours = [o.ours_s for o in outcomes if o.ours_s]
    theirs = [o.torch_s for o in outcomes if o.torch_s]
    if not ours or not theirs:
        return "no timings"
    return f"time per file: check {_times(ours)}; torch.load(weights_only=True) {_times(theirs)}"


def _times(seconds: list[float]) -> str:
    median, mean = statistics.median(seconds) * 1e3, statistics.fmean(seconds) * 1e3
    return f"median {median:.3f} ms, mean {mean:.3f} ms, max {max(seconds) * 1e3:.1f} ms"
