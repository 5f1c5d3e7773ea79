"""A run directory shared by a group of ranks: rank 0 owns it (lock, loss.jsonl, pruning), every rank saves.

The same behaviour as kit.RunDir (docs/long-runs.md), with what a group adds: the generations are
DCP directories written by every rank; the choice of the checkpoint to resume in place is rank 0's
(the newest whose sidecar, `.metadata` and data files check out: a save a kill interrupted never
has a `.metadata`, never took its name, and is removed), announced to every rank; SIGTERM and
SIGUSR1 requests are combined over the ranks at every step boundary, so that all of them save and
stop at the same step; the start line of loss.jsonl names every worker's pid and the launcher's.
"""

import os
import signal
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch.distributed.tensor import DTensor

from resumeproof.common import protocol
from resumeproof.kit.checkpoint import CheckpointError, verify_manifest
from resumeproof.kit.distributed import dcp_io, state
from resumeproof.kit.distributed.world import World, broadcast, gather_ints, on_main
from resumeproof.kit.rundir import RunDir, Save, serve
from resumeproof.kit.signals import Requests
from resumeproof.kit.summary import write_summary


class SharedRunDir:
    """A torchrun group's run directory: the strategy of a `kit.Run` under a launcher."""

    def __init__(
        self, world: World, path: Path, owned: RunDir | None, every: int, keep: int, requeue_on: str | None = None
    ) -> None:
        self.world, self.path, self.owned, self.every, self.keep = world, path, owned, every, keep
        self.requests = owned.requests if owned is not None else Requests(requeue_on)
        self.workers: list[int] = []  # every rank's pid, in rank order
        self.stopped_by: str | None = None
        self.stopped_at: int | None = None  # the step the group's stop was served at

    @classmethod
    def create(cls, world: World, path: Path, every: int, keep: int, requeue_on: str | None = None) -> "SharedRunDir":
        owned = on_main(world, lambda: RunDir.create(path, every, keep, requeue_on))
        return cls(world, path, owned, every, keep, requeue_on)

    @classmethod
    def in_place(
        cls, world: World, path: Path, warn: Callable[[str], None], every: int, keep: int, requeue_on: str | None = None
    ) -> "tuple[SharedRunDir, Path | None]":
        """--resume auto: rank 0 locks the directory, clears what killed saves left and picks the newest
        complete checkpoint; every rank learns which."""
        opened = on_main(
            world, lambda: RunDir.in_place(path, complete, lambda step: step, warn, every, keep, requeue_on)
        )
        found = opened[1] if opened is not None else None
        chosen = broadcast(world, str(found[0]) if found else None)
        shared = cls(world, path, opened[0] if opened else None, every, keep, requeue_on)
        return shared, Path(chosen) if chosen else None

    def enter_loop(self, step: int, **event: object) -> None:
        """kit.RunDir.enter_loop on rank 0, its start line naming every worker; the signal handlers on every rank."""
        self.workers = gather_ints(self.world, os.getpid())  # what a supervisor needs to kill one rank
        if self.owned is not None:
            self.owned.enter_loop(step, workers=self.workers, parent=os.getppid(), **event)
        else:
            self.requests.install()

    def log(self, record: dict) -> None:
        if self.owned is not None:
            self.owned.log(record)

    def after_update(self, step: int, save: Save) -> bool:
        """kit.RunDir.after_update with the requests of every rank: all save, all stop, at the same step."""
        stop = signal.Signals[self.requests.stop].value if self.requests.stop else 0
        flags = torch.tensor([int(self.requests.take_snapshot()), stop], dtype=torch.int64)
        dist.all_reduce(flags, op=dist.ReduceOp.MAX)
        asked, stop = bool(flags[0]), int(flags[1])
        if stop:
            self.stopped_by, self.stopped_at = signal.Signals(stop).name, step
        return serve(
            self.path,
            step,
            save,
            asked=asked,
            stop=self.stopped_by,
            every=self.every,
            keep=self.keep,
            owner=self.owned is not None,
        )

    def finish(self, save: Save) -> str:
        return save(self.path / protocol.CHECKPOINT)

    def write_summary(self, **document: Any) -> None:
        """Gather what is sharded (every rank, in the same order), then rank 0 writes once everyone is done."""
        gathered = _full(document)
        dist.barrier()
        if self.world.main:
            write_summary(self.path, **gathered)

    def close(self) -> None:
        """Rank 0 releases the directory, requeueing the Slurm job where the group stopped on its --requeue-on signal
        (the signal any rank received: the stop is every rank's)."""
        if self.owned is not None:
            again = self.stopped_by is not None and self.stopped_by == self.requests.requeue_on
            self.owned.release(self.stopped_at if again else None)


def complete(path: Path) -> int:
    """The step of a DCP checkpoint directory whose sidecar and DCP files check out (rank 0, no collective)."""
    if not path.is_dir():
        raise CheckpointError(f"{path}: not a DCP checkpoint directory")
    verify_manifest(path, suffix="")
    dcp_io.read_metadata(path)
    try:
        progress = dcp_io.from_json_tensor(dcp_io.read_item(path, state.EXTRA))["progress"]["step"]
    except (ValueError, KeyError, TypeError) as err:
        raise CheckpointError(f"{path}: its progress is unreadable ({type(err).__name__})") from None
    if not isinstance(progress, int):
        raise CheckpointError(f"{path}: its progress holds no step")
    return progress


def _full(value: Any) -> Any:
    """DTensor shards replaced by the full tensors (a collective: every rank walks the same tree)."""
    if isinstance(value, DTensor):
        return value.full_tensor()
    if isinstance(value, Mapping):
        return {key: _full(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_full(item) for item in value]
    return value
