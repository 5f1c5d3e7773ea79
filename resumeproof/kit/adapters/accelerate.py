"""Accelerate's documented resume (`save_state` / `load_state` / `skip_first_batches`) as a protocol trainer.

    run = kit.start(accelerate.PARTS)
    ...                                                    # Accelerator, prepare(model, optimizer, loader, scheduler)
    resumable = accelerate.Resumable(run=run, accelerator=accelerator, loader=loader)
    position = resumable.load()                            # load_state(run.resume), checked
    for epoch in itertools.count(position.epoch):          # skip_first_batches(loader, position.batch) first
        ...; run.record(rows=..., lr=..., loss=...)
    resumable.finish(eval=...)                             # save_state, then OUTPUT/checkpoint.pt/

Accelerate saves the global generators (every CUDA device's too, where CUDA is available) and,
when the Accelerator made one (fp16 mixed precision on a GPU), the GradScaler (`scaler.pt`), but
no data position: the position is derived from the step, as its checkpointing example does. Its
`load_state` restores the generators inside `except Exception: logger.info(...)`, so a missing
or unreadable `random_states_0.pkl` resumes silently without them; `load` compares the generators
with the file and refuses the resume when they were not restored. The `scaler` part exists only
where the Accelerator has a GradScaler.
"""

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from accelerate import Accelerator
from accelerate.utils import other

from resumeproof.common import protocol
from resumeproof.common.errors import ResumeproofError
from resumeproof.kit.adapters import common
from resumeproof.kit.adapters.common import draws_from_globals, omissions_kept, restored_generators, warn
from resumeproof.kit.run import Run, entry

PARTS = common.PARTS
RNG_FILE = "random_states_0.pkl"  # save_accelerator_state: one per process; this adapter runs one process
SCALER_FILE = "scaler.pt"  # save_accelerator_state, when the Accelerator has a GradScaler
# Each global generator: its key in RNG_FILE and how to read its current state the way save_state does.
SAVED_AS = {
    "python": ("random_state", lambda: random.getstate()),
    "numpy": ("numpy_random_seed", lambda: np.random.get_state()),
    "torch": ("torch_manual_seed", lambda: torch.get_rng_state()),
    "cuda": ("torch_cuda_manual_seed", lambda: torch.cuda.get_rng_state_all()),
}


class GeneratorsNotRestored(ResumeproofError):
    """Accelerate's load_state returned without restoring the random generators."""


@dataclass(frozen=True, kw_only=True)
class Position:
    epoch: int  # the epoch to continue in
    batch: int  # batches of it already trained: skip_first_batches(loader, batch)


@dataclass(frozen=True, kw_only=True)
class Resumable:
    """What save_state and load_state carry for one protocol run: the Accelerator's prepared model, optimizer and
    scheduler (one of each, read from the lists save_state itself walks), and the prepared training loader."""

    run: Run
    accelerator: Accelerator
    loader: Any  # the prepared training DataLoader

    @entry
    def __post_init__(self) -> None:
        common.offer_scaler(self.run, self.scaler)

    @property
    def scaler(self) -> Any:  # torch.amp.GradScaler, or None
        return self.accelerator.scaler

    @property
    @entry
    def model(self) -> torch.nn.Module:
        return _one(self.accelerator._models, "model")

    @property
    @entry
    def optimizer(self) -> Any:  # AcceleratedOptimizer
        return _one(self.accelerator._optimizers, "optimizer")

    @property
    @entry
    def scheduler(self) -> Any:  # AcceleratedScheduler
        return _one(self.accelerator._schedulers, "scheduler")

    @entry
    def load(self) -> Position:
        """Where the loop continues: load_state(run.resume) with the omitted parts left as built, then the
        generators checked against the saved file; (0, 0) for a fresh run, or when `data` is omitted."""
        if self.run.resume is None:
            return Position(epoch=0, batch=0)
        self._warn_inexact()
        parts = {protocol.MODEL: self.model, protocol.OPTIMIZER: self.optimizer, protocol.SCHEDULER: self.scheduler}
        if self.scaler is not None:
            parts[protocol.SCALER] = self.scaler
            if not (self.run.resume / SCALER_FILE).is_file():  # load_state would fail with a traceback
                raise ResumeproofError(
                    f"{self.run.resume}: {SCALER_FILE} is missing and this Accelerator has a "
                    "GradScaler: it was written without fp16 mixed precision"
                )
        elif (self.run.resume / SCALER_FILE).is_file():
            warn(
                f"{SCALER_FILE}: the checkpoint holds a GradScaler's state and this Accelerator has none; "
                "load_state ignores it"
            )
        with omissions_kept(self.run, **parts):
            self.accelerator.load_state(str(self.run.resume))
        self._check_generators(self.run.resume / RNG_FILE)
        if protocol.DATA in self.run.omit:
            return Position(epoch=0, batch=0)
        epoch, batch = divmod(self.run.start_step, len(self.loader))
        return Position(epoch=epoch, batch=batch)

    @entry
    def finish(self, *, eval: Any, meta: dict[str, Any] | None = None) -> None:
        """save_state into a scratch folder, which becomes OUTPUT/checkpoint.pt/, and the summary."""
        folder = self.run.scratch / f"step_{len(self.run.history)}"
        self.accelerator.save_state(str(folder))
        state = {
            protocol.MODEL: self.accelerator.unwrap_model(self.model).state_dict(),
            protocol.OPTIMIZER: self.optimizer.state_dict(),
            protocol.SCHEDULER: self.scheduler.state_dict(),
            **({protocol.SCALER: self.scaler.state_dict()} if self.scaler is not None else {}),
        }
        self.run.finish(folder, state=state, eval=eval, lr=self.optimizer.param_groups[0]["lr"], meta=meta)

    def _check_generators(self, path: Path) -> None:
        """Every generator not omitted holds the state the file saved (Accelerate itself only logs a failure)."""
        expected = restored_generators(self.run)
        if not expected:
            return
        if not path.is_file():
            raise GeneratorsNotRestored(f"{path}: missing, so load_state restored no generator (it says nothing)")
        try:
            saved = other.load(path)  # Accelerate's own loader: weights_only with NumPy's globals allowed
        except Exception as err:  # torch.load raises many types on what it refuses; all mean "not restored"
            raise GeneratorsNotRestored(
                f"{path}: unreadable ({type(err).__name__}), so load_state did not restore the generators"
                " (Accelerate only logs 'Could not load random states'); refusing to continue"
            ) from None
        devices = saved.get(SAVED_AS["cuda"][0])
        if "cuda" in expected and isinstance(devices, list | tuple) and len(devices) > torch.cuda.device_count():
            raise GeneratorsNotRestored(
                f"{path}: {len(devices)} CUDA devices saved, {torch.cuda.device_count()} visible: load_state could not"
                " restore their generators (Accelerate only logs 'Could not load random states'); refusing to continue"
            )
        stale = [name for name in expected if not _same(SAVED_AS[name][1](), saved.get(SAVED_AS[name][0]))]
        if stale:
            raise GeneratorsNotRestored(
                f"{path}: load_state did not restore the {', '.join(stale)} generator(s) (Accelerate only logs"
                " 'Could not load random states'); refusing to continue from another random state"
            )

    def _warn_inexact(self) -> None:
        """The configurations docs/audit.md shows inexact, named once when a resume depends on them."""
        config = self.accelerator.dataloader_config
        if not config.use_seedable_sampler:
            warn(
                "the data order is seeded from the global torch generator (A1): resumes mid-epoch are inexact; "
                "use DataLoaderConfiguration(use_seedable_sampler=True) and set_epoch (docs/audit.md)"
            )
        if getattr(self.loader, "base_dataloader", self.loader).generator is None:
            warn(
                "the DataLoader has no generator of its own: each new iterator draws from the global torch "
                "generator (A4); pass DataLoader(generator=torch.Generator())"
            )
        if draws_from_globals(self.loader.dataset):
            warn(
                "the dataset draws from the global generators in __getitem__ and the prepared loader fetches one "
                "batch ahead (A3): draw augmentation from a generator of each example's own"
            )


def _one(prepared: list[Any], what: str) -> Any:
    if len(prepared) != 1:
        raise ResumeproofError(f"the Accelerator prepared {len(prepared)} {what}s; the adapter handles exactly one")
    return prepared[0]


def _same(current: Any, saved: Any) -> bool:
    """Generator states equal element by element (tuples of ints, NumPy arrays, tensors)."""
    if isinstance(current, torch.Tensor) or isinstance(saved, torch.Tensor):
        return isinstance(saved, torch.Tensor) and torch.equal(torch.as_tensor(current), saved)
    if isinstance(current, np.ndarray) or isinstance(saved, np.ndarray):
        return bool(np.array_equal(np.asarray(current), np.asarray(saved)))
    if isinstance(current, tuple | list):
        return (
            isinstance(saved, tuple | list)
            and len(saved) == len(current)
            and all(_same(a, b) for a, b in zip(current, saved, strict=True))
        )
    return bool(current == saved)
