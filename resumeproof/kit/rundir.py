"""One run directory over a long run: a single writer, generations of checkpoints, the newest valid one.

Generations are `step_NNNNNN.pt` (the global step, six digits) with their `.sha256`. An older one
is deleted only after a newer one was written, read back and verified, so a valid generation
exists at every instant after the first. The newest valid generation is found by validating,
newest first; a file is never trusted because of its name.
"""

import fcntl
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from resumeproof.common import fingerprint
from resumeproof.common.runfiles import LOCK, TEMPORARY, generations
from resumeproof.kit.checkpoint import PROGRESS, CheckpointError


class RunDirError(Exception):
    """The run directory is busy, or holds nothing to resume from."""


Loaded = tuple[dict[str, Any], list[str]]  # what checkpoint.load returns: the state, accepted differences


def newest_valid(
    run: Path, load: Callable[[Path], Loaded], final: Path, warn: Callable[[str], None]
) -> tuple[Path, Loaded] | None:
    """The newest generation (or final checkpoint) that `load` accepts, with what it returned.
    Every candidate refused on the way is reported through `warn` and skipped, never trusted."""
    candidates: list[tuple[int, Path]] = generations(run)
    preloaded: dict[Path, Loaded] = {}
    if final.exists():  # the final checkpoint of an earlier process counts at the step it holds
        try:
            preloaded[final] = load(final)
            candidates.append((preloaded[final][0][PROGRESS]["step"], final))
        except CheckpointError as err:
            warn(f"skipping {err}")
    candidates.sort(key=lambda c: (c[0], c[1] != final), reverse=True)
    for _, path in candidates:
        try:
            return path, preloaded[path] if path in preloaded else load(path)
        except CheckpointError as err:
            warn(f"skipping {err}")
    return None


def prune(run: Path, keep: int) -> list[Path]:
    """Delete all but the newest `keep` generations; call only right after a verified write."""
    removed = []
    for _, path in generations(run)[keep:]:
        fingerprint.sidecar(path).unlink(missing_ok=True)
        path.unlink()
        removed.append(path)
    if removed:
        fingerprint.fsync_dir(run)
    return removed


def remove_temporaries(run: Path) -> list[Path]:
    """Temporary files of writes that a kill interrupted; only ever called under the lock."""
    stale = [p for p in run.iterdir() if TEMPORARY.fullmatch(p.name)]
    for path in stale:
        path.unlink()
    return stale


def lock(run: Path) -> TextIO:
    """Hold the run directory's lock for the life of the process (the kernel drops it at any exit)."""
    handle = open(run / LOCK, "a+")  # noqa: SIM115 -- held open on purpose until the process ends
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read().strip() or "another process"
        handle.close()
        raise RunDirError(f"{run}: already being written by {holder}; one writer per run directory") from None
    handle.seek(0)
    handle.truncate()
    handle.write(f"train.py pid {os.getpid()}\n")
    handle.flush()
    return handle
