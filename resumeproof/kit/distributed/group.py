"""A group of ranks under torchrun: the reduction, DCP checkpoints in a shared run directory, files from rank 0.

The same calls as Single (single.py), so that a trainer reads the same under both:

    par = kit.distributed.parallel(world, options, batch)
    par.prepare(model)                          # DDP or FSDP2, before the optimizer is built
    run = par.open_run(args, opts)              # a DCP checkpoint, or one process's file: checked, not restored
    par.set_state_dict(model, optimizer, ...)   # DCP's set_state_dict: each rank's shards in place (Group.load)
    for rows in par.shards(): ...               # this rank's rows of the global batch
    par.save(path, checkpoint)                  # the trainer's dict, as DCP keys: every rank; rank 0 commits
    run.write_summary(...)                      # the shared run directory: full tensors gathered, rank 0 writes
"""

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
from torch import nn

from resumeproof.common import dcp_check
from resumeproof.common.protocol import DATA, OPTIMIZER, OTHER_RANKS_DATA, OTHER_RANKS_RNG, RANK_PARTS, rng_part
from resumeproof.kit import layout, resume
from resumeproof.kit.checkpoint import CheckpointError, save_directory
from resumeproof.kit.checkpoint import read as read_checkpoint
from resumeproof.kit.distributed import agree, dcp_io, state
from resumeproof.kit.distributed.options import Options, refuse_other_kind_in_place
from resumeproof.kit.distributed.parallel import Parallel
from resumeproof.kit.distributed.reduce import KINDS
from resumeproof.kit.distributed.rundir import SharedRunDir, complete
from resumeproof.kit.distributed.world import World, broadcast, gather_json, on_every_rank, on_main
from resumeproof.kit.flags import ProtocolArgs
from resumeproof.kit.run import Resumed, Run

DIRECTORY, FILE = "directory", "file"  # what --resume names: a DCP checkpoint, or a single process's file


class Group(Parallel):
    def __init__(self, world: World, options: Options, batch: int) -> None:
        self.world, self.options = world, options
        self.reduction = KINDS[options.chosen](world, batch)
        self.guard = True  # the cross-rank check before each save; a rank-local fault run stands it aside
        self.run_dir: SharedRunDir | None = None

    def prepare(self, model: nn.Module) -> None:
        self.reduction.prepare(model)

    @property
    def module(self) -> nn.Module:
        return self.reduction.module

    def shards(self) -> Iterator[slice]:
        return self.reduction.shards()

    def backward(self, loss: torch.Tensor) -> None:
        self.reduction.backward(loss)

    def reduce(self) -> float:
        return self.reduction.reduce()

    def get_state_dict(self, model: nn.Module, optimizer: torch.optim.Optimizer) -> tuple[dict, dict]:
        return state.state_dicts(model, optimizer)

    def load(
        self,
        model: nn.Module,
        optimizer: torch.optim.Optimizer,
        model_state_dict: dict | None,
        optim_state_dict: dict | None,
    ) -> None:
        state.load_state_dicts(model, optimizer, model_state_dict, optim_state_dict)

    def open_run(self, args: ProtocolArgs, options: resume.Options) -> Run:
        """Where this group continues from: fresh, --resume DIR or --resume auto; loaded and checked, not restored."""
        for part in RANK_PARTS if self.world.size == 1 else ():
            args = args.withdrawn(part, "this run has no other ranks") if part in args.parts else args
        # A fault run stands for a trainer that made this mistake without the kit's guard.
        self.guard = not args.omit & set(RANK_PARTS)
        expected = options.expected()  # before the load: DCP's get_state_dict touches a fresh optimizer
        source, every, keep, kind = args.resume, args.checkpoint_every, args.keep, DIRECTORY
        if args.resume_auto:
            on_main(self.world, lambda: refuse_other_kind_in_place(args.output, directories=True))
            run_dir, source = SharedRunDir.in_place(self.world, args.output, options.warn, every, keep, args.requeue_on)
        elif source is not None:
            kind = broadcast(self.world, on_main(self.world, lambda: _kind(source)))  # rank 0 looks, all learn
        resumed = None
        if source is not None:
            if kind == DIRECTORY:
                loaded = state.load(source, options.training.model, options.training.optimizer)
                found, foreign = loaded.state, layout.validate(source, loaded.view, expected, options.accept_foreign)
            else:
                found, foreign = self._read_file(source, expected, options)
            omit = self._omitted(args.omit, options.training.generators.names)
            resumed = Resumed(source=source, state=found, omit=omit, foreign=foreign)
        else:
            options.nothing_found()
        if not args.resume_auto:
            run_dir = SharedRunDir.create(self.world, args.output, every, keep, args.requeue_on)
        self.run_dir = run_dir
        return Run(args, run_dir, resumed=resumed)

    def _read_file(
        self, source: Path, expected: layout.Expected, options: resume.Options
    ) -> tuple[dict[str, Any], list[str]]:
        """A single process's checkpoint file, read by every rank: each checks the sha256 of the very bytes it
        unpickles (weights_only) and validates them, a refusal anywhere is every rank's, and the ranks compare
        digests, so that none resumes other bytes than rank 0 (a file replaced meanwhile, a node's own copy).
        The optimizer state goes by parameter name; the full tensors are sharded by load_state_dicts."""

        def read() -> tuple[dict[str, Any], list[str], str]:
            found, digest = read_checkpoint(source)
            return found, layout.validate(source, found, expected, options.accept_foreign), digest

        found, foreign, digest = on_every_rank(self.world, read)
        digests = gather_json(self.world, digest)
        other = next((rank for rank, seen in enumerate(digests) if seen != digests[0]), None)
        if other is not None:
            raise CheckpointError(
                f"{source}: rank {other} read other bytes (sha256 {digests[other][:16]}) than rank 0"
                f" ({digests[0][:16]}); refusing to resume"
            )
        t = options.training
        return {**found, OPTIMIZER: state.by_name(found[OPTIMIZER], t.model, t.optimizer)}, foreign

    def _omitted(self, omit: frozenset[str], generators: tuple[str, ...]) -> frozenset[str]:
        """The parts this rank leaves unrestored: a rank-local fault omits its part on ranks other than 0."""
        mine = set(omit) - set(RANK_PARTS)
        if not self.world.main and OTHER_RANKS_DATA in omit:
            mine.add(DATA)
        if not self.world.main and OTHER_RANKS_RNG in omit:
            mine.update(rng_part(name) for name in generators)
        return frozenset(mine)

    def save(self, path: Path, checkpoint: dict[str, Any]) -> str:
        """A DCP checkpoint directory at `path`, written by every rank, committed by rank 0; its digest."""
        saved_by = {"world_size": self.world.size, "reduction": self.options.chosen}
        local, tensors, extra = state.split(checkpoint, saved_by)
        if self.guard:
            agree.check(self.world, agree.sections(extra, tensors), path)
        if not self.world.main:
            folder = path.with_name(broadcast(self.world, None))
            dcp_io.save(local, folder)
            return broadcast(self.world, None)
        everything = {**local, layout.RNG: tensors, state.EXTRA: dcp_io.json_tensor(extra)}

        def write(folder: Path) -> None:
            broadcast(self.world, folder.name)  # every rank writes into the folder rank 0 made
            dcp_io.save(everything, folder)  # returns once `.metadata` is written: every rank has written
            _read_back(folder)

        return broadcast(self.world, save_directory(path, write))

    def meta(self) -> dict[str, Any]:
        workers = self.run_dir.workers if self.run_dir is not None else []
        return {
            "world_size": self.world.size,
            "backend": self.world.backend,
            "reduction": self.options.chosen,
            "dist_timeout": self.options.timeout,
            "workers": workers,
        }


def _kind(source: Path) -> str:
    """What --resume names (rank 0, no collective): a DCP directory whose sidecar and files check out, before any
    rank reads it; or a file, which every rank checks as it reads it."""
    if source.is_dir():
        complete(source)
        return DIRECTORY
    if not source.is_file():
        raise CheckpointError(f"{source}: no such checkpoint file or DCP checkpoint directory")
    return FILE


def _read_back(folder: Path) -> None:
    """What DCP wrote passes the torch-free checks: a state they would refuse is never committed."""
    try:
        for name, items in dcp_check.check_files(folder, dcp_check.read(folder)).items():
            dcp_check.check_data_file(folder / name, items=items)
    except dcp_check.DcpError as err:
        raise CheckpointError(f"refusing to write it: {err}") from None
