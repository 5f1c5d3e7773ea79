"""The transformers Trainer's documented resume (`trainer.train(resume_from_checkpoint=...)`) as a protocol trainer.

    run = kit.start(transformers.PARTS)
    args = TrainingArguments(output_dir=run.scratch, max_steps=run.target(), remove_unused_columns=False, ...)
    trainer = transformers.ProtocolTrainer(run, model=model, args=args, train_dataset=rows, ...)
    trainer.train(resume_from_checkpoint=run.resume)   # the verified folder, or None
    trainer.finish(eval=...)                            # checkpoint-N becomes OUTPUT/checkpoint.pt/

`ProtocolTrainer` is the Trainer with a `training_step` that records each update (the batch's
row ids, which it takes out of the batch, the lr and the loss), a save at the last step by the
Trainer's own `_save_checkpoint`, and `--omit` applied around the Trainer's own loaders. The
Trainer skips a missing `rng_state.pth` with an INFO log line, and a missing `scaler.pt` (the
GradScaler its Accelerator makes for fp16 on a GPU) without one; this one refuses to resume. The
`scaler` part exists only where the Trainer has a GradScaler.
"""

from pathlib import Path
from typing import Any

import torch
from transformers import Trainer, TrainerCallback

from resumeproof.common import protocol
from resumeproof.common.errors import ResumeproofError
from resumeproof.kit.adapters import common
from resumeproof.kit.adapters.common import draws_from_globals, omissions_kept, restored_generators, warn
from resumeproof.kit.run import Run, entry

PARTS = common.PARTS
RNG_FILE = "rng_state.pth"  # Trainer._save_rng_state, one process
SCALER_FILE = "scaler.pt"  # Trainer._save_scaler, when its Accelerator has a GradScaler


class _SaveAtLastStep(TrainerCallback):
    """The Trainer's own save (checkpoint-N in output_dir) after the run's last update, whatever save_strategy says."""

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        if state.global_step >= state.max_steps:
            control.should_save = True
        return control


class ProtocolTrainer(Trainer):
    """A Trainer that speaks the protocol for `run`; every other argument is the Trainer's."""

    @entry
    def __init__(self, run: Run, *args: Any, rows_key: str = "idx", **kwargs: Any) -> None:
        kwargs["callbacks"] = [*(kwargs.get("callbacks") or []), _SaveAtLastStep()]
        super().__init__(*args, **kwargs)
        self.run, self.rows_key = run, rows_key
        self._check_arguments()
        common.offer_scaler(run, self._scaler())
        if protocol.DATA in run.omit:  # the Trainer's own switch for not fast-forwarding to the saved position
            self.args.ignore_data_skip = True

    @entry
    def training_step(self, model: torch.nn.Module, inputs: dict[str, Any], num_items_in_batch: Any = None) -> Any:
        """The Trainer's step, recorded: the row ids leave the batch before the model sees it."""
        rows = inputs.pop(self.rows_key)
        lr = self._built(self.optimizer).param_groups[0]["lr"]  # the scheduler steps after the update: this lr applies
        loss = super().training_step(model, inputs, num_items_in_batch)
        self.run.record(rows=rows.tolist(), lr=lr, loss=loss.item())
        return loss

    @entry
    def finish(self, *, eval: Any, meta: dict[str, Any] | None = None) -> None:
        """checkpoint-N, written by the Trainer at the last step, becomes OUTPUT/checkpoint.pt/; then the summary."""
        folder = Path(str(self.args.output_dir)) / f"checkpoint-{self.state.global_step}"
        optimizer = self._built(self.optimizer)
        state = {
            protocol.MODEL: self._built(self.model).state_dict(),
            protocol.OPTIMIZER: optimizer.state_dict(),
            protocol.SCHEDULER: self._built(self.lr_scheduler).state_dict(),
            protocol.PROGRESS: {"global_step": self.state.global_step, "epoch": self.state.epoch},
        }
        scaler = self._scaler()
        if scaler is not None:
            state[protocol.SCALER] = scaler.state_dict()
        self.run.finish(folder, state=state, eval=eval, lr=optimizer.param_groups[0]["lr"], meta=meta)

    @entry
    def _load_from_checkpoint(self, resume_from_checkpoint: str, model: Any = None) -> None:
        self._warn_inexact()
        if protocol.MODEL not in self.run.omit:
            super()._load_from_checkpoint(resume_from_checkpoint, model)

    @entry
    def _load_optimizer_and_scheduler(self, checkpoint: str | None) -> None:
        with omissions_kept(self.run, optimizer=self.optimizer, scheduler=self.lr_scheduler):
            super()._load_optimizer_and_scheduler(checkpoint)

    @entry
    def _load_rng_state(self, checkpoint: str | None) -> None:
        """The Trainer's restore, refusing the missing file it would skip with an INFO line."""
        if checkpoint is not None and restored_generators(self.run) and not (Path(checkpoint) / RNG_FILE).is_file():
            raise ResumeproofError(
                f"{checkpoint}: {RNG_FILE} is missing; the Trainer would resume without the "
                "generators and say so only at INFO level"
            )
        with omissions_kept(self.run):
            super()._load_rng_state(checkpoint)

    @entry
    def _load_scaler(self, checkpoint: str | None) -> None:
        """The Trainer's restore, refusing the missing file it would skip without a word, and the file it would
        load into a GradScaler it does not have; an omitted scaler stays as built."""
        if checkpoint is None:
            return
        saved = (Path(checkpoint) / SCALER_FILE).is_file()
        if self._scaler() is None:
            if saved:
                raise ResumeproofError(
                    f"{checkpoint}: {SCALER_FILE} holds a GradScaler's state and this Trainer has "
                    "none (fp16 mixed precision on a GPU makes one)"
                )
            return
        if protocol.SCALER in self.run.omit:
            return
        if not saved:
            raise ResumeproofError(
                f"{checkpoint}: {SCALER_FILE} is missing; the Trainer would resume with a fresh "
                "GradScaler without a word"
            )
        super()._load_scaler(checkpoint)

    def _scaler(self) -> Any:
        """The GradScaler the Trainer's Accelerator made (fp16 on a GPU), or None."""
        return getattr(self.accelerator, "scaler", None)

    @staticmethod
    def _built(thing: Any) -> Any:
        """The model, optimizer or scheduler, which the Trainer has built once it trains."""
        if thing is None:
            raise ResumeproofError("the Trainer has not built its model, optimizer and scheduler yet")
        return thing

    def _check_arguments(self) -> None:
        args = self.args
        if args.max_steps != self.run.target():
            raise ResumeproofError(f"max_steps is {args.max_steps}; the protocol run must stop at {self.run.target()}")
        if args.gradient_accumulation_steps != 1:
            raise ResumeproofError("gradient_accumulation_steps must be 1: the protocol records one update per batch")
        if args.remove_unused_columns:
            raise ResumeproofError(f"remove_unused_columns=True drops the {self.rows_key!r} column the history needs")

    def _warn_inexact(self) -> None:
        """The configuration docs/audit.md shows inexact mid-epoch, named when a resume depends on it."""
        if self.train_dataset is not None and draws_from_globals(self.train_dataset):
            warn(
                "the dataset draws from the global generators in __getitem__: a mid-epoch resume restores them "
                "after the first batch is fetched (H1, A3); draw augmentation from a generator of each example's own"
            )
