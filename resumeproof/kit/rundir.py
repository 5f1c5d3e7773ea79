"""One run directory for the life of one process: a single writer, generations, the loss log, signals.

    run = RunDir.create(output, every=K, keep=G)      # or, for --resume auto: RunDir.in_place(...)
    run.enter_loop(step, resumed_from=...)            # signal handlers first, then the log's start line
    for ...:
        run.log(record)
        if run.after_update(step, save):              # serves SIGUSR1, SIGTERM and the cadence
            break                                     # a SIGTERM asked the run to stop
    digest = run.finish(save)                         # the final checkpoint.pt

Generations are `step_NNNNNN.pt` with their `.sha256`. An older one is deleted only after a newer
one was written, read back and verified, so a valid generation exists at every instant after the
first. The newest valid one is found by validating, newest first: a file is never trusted because
of its name.
"""

import fcntl
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO, TypeVar

from resumeproof.common import fingerprint, losslog, protocol, runfiles
from resumeproof.common.errors import ResumeproofError
from resumeproof.common.protocol import CHECKPOINT_EVERY_FLAG, DEFAULT_KEEP, KEEP_FLAG
from resumeproof.kit import requeue
from resumeproof.kit.checkpoint import CheckpointError
from resumeproof.kit.flag_table import flag
from resumeproof.kit.signals import Requests
from resumeproof.kit.summary import write_summary

T = TypeVar("T")
Save = Callable[[Path], str]  # writes a checkpoint at the path given, returns its sha256


class RunDirError(ResumeproofError):
    """The run directory is busy, is not a run directory, or holds nothing valid to resume from."""


class RunDir:
    """One process's run directory: the strategy of a `kit.Run` without a launcher."""

    def __init__(
        self, path: Path, held: TextIO, every: int = 0, keep: int = DEFAULT_KEEP, requeue_on: str | None = None
    ) -> None:
        self.path, self._held, self.every, self.keep = path, held, *cadence(every, keep)
        self.requests = Requests(requeue_on)
        self._replayed: set[int] = set()
        self._stopped_at: int | None = None  # the step a stop was served at

    @classmethod
    def create(cls, path: Path, every: int = 0, keep: int = DEFAULT_KEEP, requeue_on: str | None = None) -> "RunDir":
        """A new run directory (the caller refused an existing one before doing any work)."""
        cadence(every, keep)  # before anything is created
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            path.mkdir()  # fails, rather than merging, if another process created it meanwhile
        except FileExistsError:
            raise RunDirError(f"--output {path}: created by someone else meanwhile; refusing to touch it") from None
        return cls(path, _lock(path), every, keep, requeue_on)

    @classmethod
    def in_place(
        cls,
        path: Path,
        load: Callable[[Path], T],
        step_of: Callable[[T], int],
        warn: Callable[[str], None],
        every: int = 0,
        keep: int = DEFAULT_KEEP,
        requeue_on: str | None = None,
    ) -> "tuple[RunDir, tuple[Path, T] | None]":
        """--resume auto: lock the directory (creating it if absent), clear what killed writers left, and
        find the newest valid checkpoint. A directory whose checkpoints are all invalid is refused rather
        than started over; one that holds none (a run killed before its first) starts from the beginning."""
        cadence(every, keep)  # before anything is touched
        path.mkdir(parents=True, exist_ok=True)
        strangers = sorted(p.name for p in path.iterdir() if not runfiles.is_run_file(p.name))
        if strangers:
            raise RunDirError(f"--output {path}: not a run directory (holds {', '.join(strangers[:3])}); refusing")
        run = cls(path, _lock(path), every, keep, requeue_on)
        for stale in [p for p in path.iterdir() if runfiles.TEMPORARY.fullmatch(p.name)]:
            _remove(stale)
            warn(f"removed {stale}, left by an interrupted write")
        found = _newest_valid(path, load, step_of, warn)
        if found is None and (runfiles.generations(path) or (path / protocol.CHECKPOINT).exists()):
            raise RunDirError(f"--output {path}: holds checkpoints but no valid one; refusing to start over on top")
        return run, found

    def enter_loop(self, step: int, **event: object) -> None:
        """Right before the first update: install the signal handlers, then write loss.jsonl's start line (a
        supervisor may signal once it reads that line)."""
        self.requests.install()
        self._replayed = losslog.start(self.path / losslog.NAME, step, pid=os.getpid(), **event)

    def log(self, record: dict) -> None:
        """Append an update's record to loss.jsonl, marked when it replays a step a killed process logged."""
        replay = record["step"] in self._replayed
        losslog.append(self.path / losslog.NAME, {**record, losslog.REPLAY: True} if replay else record)

    def after_update(self, step: int, save: Save) -> bool:
        """Write a generation when one is due or asked for (SIGUSR1, SIGTERM); True when the run must stop."""
        asked, stop = self.requests.take_snapshot(), self.requests.stop
        self._stopped_at = step if stop else None
        return serve(self.path, step, save, asked=asked, stop=stop, every=self.every, keep=self.keep)

    @property
    def stopped_by(self) -> str | None:
        return self.requests.stop

    def finish(self, save: Save) -> str:
        return save(self.path / protocol.CHECKPOINT)

    def write_summary(self, **document: Any) -> None:
        write_summary(self.path, **document)

    def close(self) -> None:
        """Release the directory; a run stopped by its --requeue-on signal first has Slurm requeue its job."""
        self.release(self._stopped_at if self.requests.requeue else None)

    def release(self, requeue_at: int | None) -> None:
        """Release the directory, having Slurm requeue the job first where the run stopped at `requeue_at` on its
        --requeue-on signal: last, once the generation, the final checkpoint and the summary are written, since the
        requeue's SIGTERM and KillWait's SIGKILL follow it."""
        try:
            if requeue_at is not None:
                job = requeue.requeue(requeue_at)
                losslog.append(self.path / losslog.NAME, {"event": "requeue", "job": job, "step": requeue_at})
                self.requests.until_terminated(requeue.TERM_WITHIN)
        finally:
            self._held.close()


def cadence(every: int, keep: int) -> tuple[int, int]:
    """A generation every `every` steps (0: never) and `keep` of them kept, held to the bounds of their flags:
    `keep` below 1 would delete the newest generation right after writing it."""
    return flag(CHECKPOINT_EVERY_FLAG).value(every), flag(KEEP_FLAG).value(keep)


def serve(
    run: Path,
    step: int,
    save: Save,
    *,
    asked: bool,
    stop: str | None,
    every: int,
    keep: int,
    owner: bool = True,
) -> bool:
    """After update `step`: a generation when one is due, asked for or a stop requested (the signal's name);
    the owner of the run directory also prunes the old ones and logs the stop. True when the run must stop."""
    if asked or stop or (every and step % every == 0):
        save(runfiles.generation(run, step))
        if owner:
            prune(run, keep)
    if stop and owner:
        losslog.append(run / losslog.NAME, {"event": "stop", "signal": stop, "step": step})
    return stop is not None


def prune(run: Path, keep: int) -> list[Path]:
    """Delete all but the newest `keep` (>= 1) generations; call only right after a verified write."""
    flag(KEEP_FLAG).value(keep)
    removed = [path for _, path in runfiles.generations(run)[keep:]]
    for path in removed:
        fingerprint.sidecar(path).unlink(missing_ok=True)
        _remove(path)
    if removed:
        fingerprint.fsync_dir(run)
    return removed


def _newest_valid(
    run: Path, load: Callable[[Path], T], step_of: Callable[[T], int], warn: Callable[[str], None]
) -> tuple[Path, T] | None:
    """The newest generation (or final checkpoint) that `load` accepts, with what it returned.
    Every candidate refused on the way is reported through `warn` and skipped, never trusted."""
    final = run / protocol.CHECKPOINT
    candidates, preloaded = runfiles.generations(run), dict[Path, T]()
    if final.exists():  # the final checkpoint of an earlier process counts at the step it holds
        try:
            preloaded[final] = load(final)
            candidates.append((step_of(preloaded[final]), final))
        except CheckpointError as err:
            warn(f"skipping {err}")
    candidates.sort(key=lambda c: (c[0], c[1] != final), reverse=True)
    for _, path in candidates:
        try:
            return path, preloaded[path] if path in preloaded else load(path)
        except CheckpointError as err:
            warn(f"skipping {err}")
    return None


def _remove(path: Path) -> None:
    """A file, or a directory checkpoint (a DCP save) with everything in it."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


def _lock(run: Path) -> TextIO:
    """Hold the run directory's lock for the life of the process (the kernel drops it at any exit)."""
    handle = open(run / runfiles.LOCK, "a+")  # noqa: SIM115 -- held open on purpose until the process ends
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "another process"
        handle.close()
        raise RunDirError(f"{run}: already being written by {holder}; one writer per run directory") from None
    handle.seek(0)
    handle.truncate()
    handle.write(f"{_program()} pid {os.getpid()}\n")  # named in a second writer's refusal
    handle.flush()
    return handle


def _program() -> str:
    """This process as a user would name it: the script (`train.py`), or the module run with -m."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    return spec.name.removesuffix(".__main__") if spec is not None else Path(sys.argv[0]).name
