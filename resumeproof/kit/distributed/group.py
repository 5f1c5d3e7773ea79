"""A group of ranks under torchrun: the reduction, DCP checkpoints in a shared run directory, files from rank 0.

The same calls as Single (single.py), so that a trainer reads the same under both:

    par = kit.distributed.parallel(world, options, batch)
    par.prepare(model)                          # DDP or FSDP2, before the optimizer is built
    run_dir, start = par.begin(args, t, ...)    # the DCP checkpoint loaded, checked, restored
    loss = par.backward(loss_of)                # this rank's rows of the global batch
    par.save(path, t, ...)                      # every rank; rank 0 commits
    par.write_summary(output, ...)              # full tensors gathered; rank 0 writes, after everyone
"""

import functools
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch.distributed as dist
from torch.distributed.tensor import DTensor

from resumeproof.common import dcp_check
from resumeproof.common.errors import ResumeproofError
from resumeproof.kit import layout, resume
from resumeproof.kit.checkpoint import CheckpointError, save_directory
from resumeproof.kit.distributed import agree, dcp_io, state
from resumeproof.kit.distributed.options import OTHER_RANKS_DATA, OTHER_RANKS_RNG, RANK_PARTS, Options
from resumeproof.kit.distributed.reduce import KINDS, LossOf
from resumeproof.kit.distributed.rundir import SharedRunDir, complete
from resumeproof.kit.distributed.world import World, broadcast, on_main
from resumeproof.kit.flags import ProtocolArgs
from resumeproof.kit.summary import write_summary


class Group:
    def __init__(self, world: World, options: Options, batch: int) -> None:
        self.world, self.options = world, options
        self.reduction = KINDS[options.chosen](world, batch)
        self.guard = True  # the cross-rank check before each save; a rank-local fault run stands it aside
        self.run_dir: SharedRunDir | None = None

    def prepare(self, model: Any) -> None:
        self.reduction.prepare(model)

    def backward(self, loss_of: LossOf) -> float:
        return self.reduction.backward(loss_of)

    def begin(
        self, args: ProtocolArgs, t: layout.Training, expected: layout.Expected, warn: Callable[[str], None],
        accept_foreign: bool = False, pivots: dict[str, float] | None = None,
    ) -> tuple[SharedRunDir, resume.Start]:  # fmt: skip
        """Where this group starts: fresh, --resume DIR or --resume auto; all but the generators restored."""
        if args.omit & set(RANK_PARTS) and self.world.size == 1:
            raise ResumeproofError(f"--omit={sorted(args.omit & set(RANK_PARTS))[0]}: this run has no other ranks")
        # A fault run stands for a trainer that made this mistake without the kit's guard.
        self.guard = not args.omit & set(RANK_PARTS)
        source = args.resume
        if args.resume_auto:
            run_dir, source = SharedRunDir.in_place(self.world, args.output, warn, args.checkpoint_every, args.keep)
        elif source is not None:
            on_main(self.world, lambda: complete(source))  # its sidecar and DCP files, before any rank reads it
        found, restore = None, None
        if source is not None:
            loaded = state.load(source, t)
            found = (source, (loaded.view, layout.validate(source, loaded.view, expected, accept_foreign)))
            restore = functools.partial(_restore, loaded)
        omit = self._omitted(args.omit, t.generators.names)
        start = resume.continue_from(found, t, omit, pivots or {}, restore or layout.restore)
        if not args.resume_auto:
            run_dir = SharedRunDir.create(self.world, args.output, args.checkpoint_every, args.keep)
        self.run_dir = run_dir
        return run_dir, start

    def _omitted(self, omit: frozenset[str], generators: tuple[str, ...]) -> frozenset[str]:
        """The parts this rank leaves unrestored: a rank-local fault omits its part on ranks other than 0."""
        mine = set(omit) - set(RANK_PARTS)
        if not self.world.main and OTHER_RANKS_DATA in omit:
            mine.add(layout.DATA)
        if not self.world.main and OTHER_RANKS_RNG in omit:
            mine.update(f"rng-{name}" for name in generators)
        return frozenset(mine)

    def save(self, path: Path, t: layout.Training, config: dict, identity: dict, provenance: list) -> str:
        """A DCP checkpoint directory at `path`, written by every rank, committed by rank 0; its digest."""
        saved_by = {"world_size": self.world.size, "reduction": self.options.chosen}
        local, tensors, extra = state.capture(t, config, identity, provenance, saved_by)
        if self.guard:
            agree.check(self.world, agree.sections(extra, tensors), path)
        everything = {**local, state.RNG: tensors, state.EXTRA: dcp_io.json_tensor(extra)} if self.world.main else local
        if not self.world.main:
            folder = path.with_name(broadcast(self.world, None))
            dcp_io.save(everything, folder)
            return broadcast(self.world, None)

        def write(folder: Path) -> None:
            broadcast(self.world, folder.name)  # every rank writes into the folder rank 0 made
            dcp_io.save(everything, folder)  # returns once `.metadata` is written: every rank has written
            _read_back(folder)

        return broadcast(self.world, save_directory(path, write))

    def write_summary(self, output: Path, **document: Any) -> None:
        """Gather what is sharded (every rank, in the same order), then rank 0 writes once everyone is done."""
        gathered = _full(document)
        dist.barrier()
        if self.world.main:
            write_summary(output, **gathered)

    def meta(self) -> dict[str, Any]:
        workers = self.run_dir.workers if self.run_dir is not None else []
        return {
            "world_size": self.world.size, "backend": self.world.backend, "reduction": self.options.chosen,
            "dist_timeout": self.options.timeout, "workers": workers,
        }  # fmt: skip


def _restore(loaded: state.Loaded, view: dict[str, Any], t: layout.Training, omit: frozenset[str]) -> list[str]:
    return state.restore(loaded, t, omit)


def _read_back(folder: Path) -> None:
    """What DCP wrote passes the torch-free checks: a state they would refuse is never committed."""
    try:
        for name, items in dcp_check.check_files(folder, dcp_check.read(folder)).items():
            dcp_check.check_data_file(folder / name, items=items)
    except dcp_check.DcpError as err:
        raise CheckpointError(f"refusing to write it: {err}") from None


def _full(value: Any) -> Any:
    """DTensor shards replaced by the full tensors (a collective: every rank walks the same tree)."""
    if isinstance(value, DTensor):
        return value.full_tensor()
    if isinstance(value, Mapping):
        return {key: _full(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_full(item) for item in value]
    return value
