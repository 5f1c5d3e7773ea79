"""Lightning's documented resume (`trainer.fit(model, ckpt_path=...)` from a ModelCheckpoint) as a protocol trainer.

    run = kit.start(lightning.PARTS)
    protocol = lightning.ProtocolCallback(run, rows_key="idx")
    trainer = L.Trainer(max_steps=run.target(), callbacks=[protocol, ModelCheckpoint(dirpath=run.scratch,
                        every_n_train_steps=1, save_top_k=1)], ...)
    trainer.fit(module, ckpt_path=protocol.ckpt_path)   # the single .ckpt of the verified run.resume, or None
    protocol.finish(trainer, eval=...)                  # the ModelCheckpoint folder becomes OUTPUT/checkpoint.pt/

Lightning's checkpoint holds the model, optimizers, schedulers, loop progress, stateful
callbacks and the precision plugin's GradScaler (under the plugin's class name, `MixedPrecision`,
when `precision="16-mixed"` made one), and no random generator; a DataLoader without
`state_dict` restarts its epoch on resume. `GlobalRngState` and `ResumableLoader` are the two
additions docs/audit.md recommends; the callback says on resume when either is missing, and runs
the documented path as it is. The `scaler` part exists only where the precision plugin has a
GradScaler; a checkpoint without its state, which Lightning skips without a word, is refused.
"""

import copy
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import torch
from torch.utils.data import BatchSampler, DataLoader, RandomSampler

from resumeproof.common import protocol
from resumeproof.common.errors import ResumeproofError
from resumeproof.kit.adapters import common
from resumeproof.kit.adapters.common import restored_generators, warn
from resumeproof.kit.generators import Generators
from resumeproof.kit.run import Run, entry

PARTS = common.PARTS
LEGACY_SCALER_KEY = "native_amp_scaling_state"  # where checkpoints of old Lightning releases keep the scaler


class GlobalRngState(pl.Callback):
    """Saves Python's, NumPy's and torch's global generators with every checkpoint and restores them on resume
    (the ones --omit names stay as seeded). Lightning saves none (docs/audit.md, L1)."""

    def __init__(self, run: Run) -> None:
        self.run = run

    def state_dict(self) -> dict[str, Any]:
        return Generators.global_().state()  # ints, lists and a tensor: the checkpoint stays weights_only

    @entry
    def on_load_checkpoint(self, trainer: pl.Trainer, pl_module: pl.LightningModule, checkpoint: dict) -> None:
        """Lightning skips a callback whose state the checkpoint lacks, without a word: refuse instead."""
        if self.state_key not in checkpoint.get("callbacks", {}) and restored_generators(self.run):
            raise ResumeproofError("the checkpoint holds no generator state: it was written without GlobalRngState")

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        Generators.global_().restore(state_dict, restored_generators(self.run))


class _SkippingBatches(BatchSampler):
    """Batches of a sampler; the first `skip` of an epoch are dropped at index level (nothing fetched or drawn)."""

    def __init__(self, sampler: RandomSampler, batch_size: int) -> None:
        super().__init__(sampler, batch_size, drop_last=False)
        self.skip, self.taken = 0, 0

    def __iter__(self) -> Iterator[list[int]]:
        skip, self.skip, self.taken = self.skip, 0, 0
        for index, batch in enumerate(super().__iter__()):
            self.taken = index + 1
            if index >= skip:
                yield batch


class ResumableLoader(DataLoader):
    """A shuffling DataLoader with its own generator whose position Lightning saves and restores (its `_Stateful`
    interface): the generator's state when the epoch's iterator started, and the batches taken (L2)."""

    def __init__(self, dataset: Any, *, batch_size: int, seed: int, **kwargs: Any) -> None:
        generator = torch.Generator().manual_seed(seed)
        batches = _SkippingBatches(RandomSampler(dataset, generator=generator), batch_size)
        super().__init__(dataset, batch_sampler=batches, generator=generator, **kwargs)
        self.epoch_start, self.replay = generator.get_state(), False

    def __iter__(self) -> Any:
        assert self.generator is not None
        if self.replay:  # the resumed epoch: the same permutation, then the taken batches skipped
            self.generator.set_state(self.epoch_start)
            self.replay = False
        else:
            self.epoch_start = self.generator.get_state()
        return super().__iter__()

    def state_dict(self) -> dict[str, Any]:
        assert self.generator is not None and isinstance(self.batch_sampler, _SkippingBatches)
        if self.batch_sampler.taken == len(self):
            # Lightning stops after len(loader) batches and never asks the exhausted iterator for more, so the
            # sampler never draws the extra permutation it would at StopIteration: the next epoch starts from the
            # generator as it is now (lightning/pytorch/loops/fetchers.py: _DataFetcher.__next__).
            return {"generator": self.generator.get_state(), "taken": 0}
        return {"generator": self.epoch_start, "taken": self.batch_sampler.taken}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        assert isinstance(self.batch_sampler, _SkippingBatches)
        self.epoch_start, self.batch_sampler.skip, self.replay = state_dict["generator"], state_dict["taken"], True


class ProtocolCallback(pl.Callback):
    """One record per update, the --omit parts left as built, the epoch starts counted, and the summary."""

    def __init__(self, run: Run, rows_key: str = "idx") -> None:
        self.run, self.rows_key = run, rows_key
        self.epoch_starts = 0  # on_train_epoch_start calls over the whole trajectory (saved with the checkpoint)
        self._pending: tuple[list[int], float] | None = None
        self._fresh_model: dict[str, Any] | None = None
        self._loaded: dict[str, Any] | None = None

    @property
    @entry
    def ckpt_path(self) -> Path | None:
        """The .ckpt file inside the verified checkpoint folder, for `fit(ckpt_path=...)`; None for a fresh run."""
        if self.run.resume is None:
            return None
        found = sorted(self.run.resume.glob("*.ckpt"))
        if len(found) != 1:
            raise ResumeproofError(f"{self.run.resume}: holds {len(found)} .ckpt files, expected the one to resume")
        return found[0]

    def state_dict(self) -> dict[str, Any]:
        return {"epoch_starts": self.epoch_starts}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.epoch_starts = state_dict["epoch_starts"]

    @entry
    def setup(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        if trainer.accumulate_grad_batches != 1:
            raise ResumeproofError("accumulate_grad_batches must be 1: the protocol records one update per batch")
        common.offer_scaler(self.run, _scaler(trainer))
        if protocol.MODEL in self.run.omit:  # as built, before Lightning restores the checkpoint into it
            self._fresh_model = copy.deepcopy(pl_module.state_dict())

    @entry
    def on_load_checkpoint(self, trainer: pl.Trainer, pl_module: pl.LightningModule, checkpoint: dict) -> None:
        if not any(isinstance(callback, GlobalRngState) for callback in getattr(trainer, "callbacks", [])):
            warn("Lightning saves no random generator (L1): add kit.adapters.lightning.GlobalRngState (docs/audit.md)")
        if self._fresh_model is not None:  # the model was restored just before the callbacks: put it back
            pl_module.load_state_dict(self._fresh_model)
        if protocol.DATA in self.run.omit:
            loops = checkpoint["loops"]["fit_loop"]["state_dict"]
            if not loops.get("combined_loader"):
                raise ResumeproofError(
                    f"{protocol.omit_token(protocol.DATA)}: the train DataLoader saves no position (Lightning "
                    "restarts its epoch, L2); there is nothing to omit"
                )
            loops["combined_loader"] = []
        self._keep_scaler(trainer, checkpoint)
        self._loaded = checkpoint  # optimizers and schedulers are restored from it after on_fit_start

    def _keep_scaler(self, trainer: pl.Trainer, checkpoint: dict) -> None:
        """The GradScaler's state, which Lightning restores after on_fit_start from the plugin's key and skips
        without a word when the key is missing: refused when missing, removed when --omit names the scaler."""
        plugin = trainer.precision_plugin
        key = type(plugin).__qualname__
        if _scaler(trainer) is None:
            if key in checkpoint or LEGACY_SCALER_KEY in checkpoint:
                warn(f"the checkpoint holds {key} state and this Trainer's precision plugin has no GradScaler")
            return
        if protocol.SCALER in self.run.omit:  # the plugin's scaler stays as built
            checkpoint.pop(key, None)
            checkpoint.pop(LEGACY_SCALER_KEY, None)
        elif key not in checkpoint and LEGACY_SCALER_KEY not in checkpoint:
            raise ResumeproofError(
                f"the checkpoint holds no GradScaler state ({key}): written without mixed precision, it would resume "
                "with a fresh scaler, and Lightning says nothing"
            )

    @entry
    def on_fit_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if self._loaded is None:
            return
        if protocol.OPTIMIZER in self.run.omit:  # the freshly built states replace the saved ones
            self._loaded["optimizer_states"] = [copy.deepcopy(o.state_dict()) for o in trainer.optimizers]
        if protocol.SCHEDULER in self.run.omit:
            schedulers = [config.scheduler for config in trainer.lr_scheduler_configs]
            self._loaded["lr_schedulers"] = [copy.deepcopy(s.state_dict()) for s in schedulers]

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        loader = trainer.train_dataloader
        if self._loaded is not None and not (hasattr(loader, "state_dict") and hasattr(loader, "load_state_dict")):
            warn(
                "the train DataLoader saves no position (L2): a mid-epoch resume restarts the epoch; use "
                "kit.adapters.lightning.ResumableLoader (docs/audit.md)"
            )

    def on_train_epoch_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self.epoch_starts += 1

    def on_train_batch_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule, batch: Any, idx: int) -> None:
        self._pending = batch[self.rows_key].tolist(), trainer.optimizers[0].param_groups[0]["lr"]

    def on_train_batch_end(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        assert self._pending is not None
        loss = outputs["loss"] if isinstance(outputs, Mapping) else outputs
        rows, lr = self._pending
        self.run.record(rows=rows, lr=lr, loss=float(loss))

    @entry
    def finish(self, trainer: pl.Trainer, *, eval: Any, meta: dict[str, Any] | None = None) -> None:
        """The ModelCheckpoint folder (one .ckpt: save_top_k=1) becomes OUTPUT/checkpoint.pt/, then the summary."""
        saver = trainer.checkpoint_callback
        if not isinstance(saver, pl.callbacks.ModelCheckpoint) or saver.dirpath is None:
            raise ResumeproofError("the Trainer has no ModelCheckpoint with a dirpath: nothing to resume from")
        loader = trainer.train_dataloader
        if isinstance(loader, ResumableLoader) and loader.generator is not None:
            self.run.track(loader=loader.generator)
        optimizer = trainer.optimizers[0]
        state = {
            protocol.MODEL: trainer.lightning_module.state_dict(),
            protocol.OPTIMIZER: optimizer.state_dict(),
            protocol.SCHEDULER: [config.scheduler.state_dict() for config in trainer.lr_scheduler_configs],
            protocol.PROGRESS: {
                "epochs": trainer.fit_loop.epoch_progress.state_dict(),
                "epoch_starts": self.epoch_starts,
            },
        }
        scaler = _scaler(trainer)
        if scaler is not None:
            state[protocol.SCALER] = scaler.state_dict()
        self.run.finish(Path(saver.dirpath), state=state, eval=eval, lr=optimizer.param_groups[0]["lr"], meta=meta)


def _scaler(trainer: pl.Trainer) -> Any:
    """The precision plugin's GradScaler (MixedPrecision with 16-mixed, FSDPPrecision), or None."""
    return getattr(trainer.precision_plugin, "scaler", None)
