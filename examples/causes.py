"""The audit's variants of each example (docs/audit.md): the user-level fix, and the removal of one confirmed cause.

    python -B examples/accelerate_example.py --remove-cause A3 --remove-cause A4 --steps 6 --output runs/a
    python -B examples/accelerate_example.py --fix user --steps 6 --output runs/b

`--fix user` applies what docs/audit.md recommends a user do. `--remove-cause CODE` (repeatable)
removes one cause by the smallest change that does it: a configuration a user could choose
(A1, A2, L1, L2) or a patch of the installed framework (A3, A4, H1, H2, L3), which is a confirming
experiment, not a recommendation. Every cause names the function it lives in; `benchmarks/audit.py`
runs each one alone (every other cause removed) and all removed, so that each is shown to be
sufficient and the list complete.
"""

import argparse
import functools
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, kw_only=True)
class Cause:
    code: str
    where: str  # file: function, in the installed package
    what: str  # the mechanism, one sentence
    removed_by: str  # the smallest change that removes it


CAUSES = {
    cause.code: cause
    for cause in (
        Cause(
            code="A1",
            where="torch/utils/data/sampler.py: RandomSampler.__iter__",
            what="without a generator of its own, each epoch's order is seeded from the global torch generator when the"
            " epoch's iterator starts; after load_state that generator holds its post-step-k state, so the resumed"
            " epoch (rebuilt by skip_first_batches) gets another order",
            removed_by="DataLoaderConfiguration(use_seedable_sampler=True): the order becomes f(seed, epoch)",
        ),
        Cause(
            code="A2",
            where="accelerate/data_loader.py: DataLoaderShard.__iter__ (set_epoch(self.iteration))",
            what="the seedable sampler's epoch is the loader's iteration counter, which save_state does not save: a"
            " resumed process replays epoch 0's order in its first full epoch",
            removed_by="train_loader.set_epoch(epoch) before each epoch",
        ),
        Cause(
            code="A3",
            where="accelerate/data_loader.py: DataLoaderShard.__iter__ (one batch ahead)",
            what="the prepared loader fetches batch k+1 before yielding batch k, so batch k+1's augmentation draws are"
            " already in the generator states save_state writes after step k; the resumed run draws them again",
            removed_by="patch DataLoaderShard.__iter__ to yield each batch as soon as it is fetched",
        ),
        Cause(
            code="A4",
            where="torch/utils/data/dataloader.py: _BaseDataLoaderIter.__init__ (_base_seed)",
            what="a new DataLoader iterator draws its base seed from the global torch generator (even without workers);"
            " skip_first_batches starts one mid-epoch after the restore, a draw the continuous run made at the epoch's"
            " start: every later dropout mask shifts",
            removed_by="patch _BaseDataLoaderIter.__init__ to put the global torch generator back after that draw",
        ),
        Cause(
            code="L1",
            where="lightning/pytorch/trainer/connectors/checkpoint_connector.py: dump_checkpoint",
            what="the checkpoint holds no random generator state: the resumed run draws dropout, augmentation and the"
            " next epoch's shuffle seed from freshly seeded generators",
            removed_by="a stateful callback saving the global generators (kit.adapters.lightning.GlobalRngState)",
        ),
        Cause(
            code="L2",
            where="lightning/pytorch/loops/training_epoch_loop.py: _TrainingEpochLoop.reset",
            what="a DataLoader without state_dict/load_state_dict restarts its epoch from a fresh iterator on resume"
            " (only a warning) and the epoch is cut after the remaining number of batches",
            removed_by="a resumable loader (kit.adapters.lightning.ResumableLoader): its generator and position saved",
        ),
        Cause(
            code="L3",
            where="lightning/pytorch/loops/fit_loop.py: _FitLoop.on_advance_start",
            what="after a resume from a checkpoint written at an epoch's last batch, reset() closes that epoch but the"
            " next one still counts as restarted mid-epoch: its on_train_epoch_start hooks do not run and the epoch"
            " progress is not incremented",
            removed_by="patch _FitLoop.on_advance_start to start that epoch as a fresh one",
        ),
        Cause(
            code="H1",
            where="transformers/trainer.py: Trainer._run_epoch (rng_to_sync)",
            what="mid-epoch, rng_state.pth is restored only after the first batch past the skipped ones is fetched, so"
            " that batch (and the one fetched ahead with it) draws its augmentation from freshly seeded generators",
            removed_by="patch Trainer._run_epoch to restore rng_state.pth before the resumed epoch's iterator starts",
        ),
        Cause(
            code="H2",
            where="torch/utils/data/dataloader.py: _BaseDataLoaderIter.__init__ (_base_seed)",
            what="with the restore before the fetch, the new iterator's base seed draw consumes the restored global"
            " torch generator (the Trainer's DataLoader has no generator of its own), shifting every dropout mask",
            removed_by="patch _BaseDataLoaderIter.__init__ to put the global torch generator back after that draw",
        ),
    )
}
FRAMEWORK_CAUSES = {"plain": (), "accelerate": ("A1", "A2", "A3", "A4"), "lightning": ("L1", "L2", "L3")}
FRAMEWORK_CAUSES["transformers"] = ("H1", "H2", "A3")  # the Trainer iterates through accelerate's DataLoaderShard
FIXES = ("user",)


@dataclass(frozen=True, kw_only=True)
class Variant:
    fix: str | None = None  # --fix NAME
    removed: frozenset[str] = frozenset()  # --remove-cause CODE ...

    def removes(self, code: str) -> bool:
        return code in self.removed


def parse(framework: str, argv: Sequence[str] | None = None) -> tuple[Variant, list[str]]:
    """The variant flags, which come before the protocol's; the patches it asks for applied; the rest of argv."""
    parser = argparse.ArgumentParser(allow_abbrev=False, add_help=False)
    parser.add_argument("--fix", choices=FIXES)
    parser.add_argument("--remove-cause", action="append", default=[], choices=FRAMEWORK_CAUSES[framework])
    namespace, rest = parser.parse_known_args(argv)
    variant = Variant(fix=namespace.fix, removed=frozenset(namespace.remove_cause))
    for code in sorted(variant.removed):
        PATCHES.get(code, lambda: None)()
    return variant, rest


def yield_without_lookahead() -> None:
    """A3: DataLoaderShard yields each batch as soon as it is fetched (what remains of __iter__ without the
    look-ahead; the end of the epoch is known from the loader's length)."""
    from accelerate.data_loader import DataLoaderShard
    from accelerate.utils import synchronize_rng_states

    def __iter__(self: Any) -> Any:
        if self.rng_types is not None:
            synchronize_rng_states(self.rng_types, self.synchronized_generator)
        self.begin()
        self.set_epoch(self.iteration)
        last = len(self.base_dataloader) - 1
        for index, batch in enumerate(self.base_dataloader.__iter__()):
            self.end_of_dataloader = index == last
            self._update_state_dict()
            if index >= self.skip_batches:
                yield batch
        self.iteration += 1
        self.end()

    DataLoaderShard.__iter__ = __iter__


def keep_global_generator_at_iterator_start() -> None:
    """A4, H2: a DataLoader iterator without a generator of its own leaves the global torch generator as it was."""
    import torch
    from torch.utils.data import dataloader

    original = dataloader._BaseDataLoaderIter.__init__

    @functools.wraps(original)
    def __init__(self: Any, loader: Any) -> None:
        if loader.generator is not None:
            return original(self, loader)
        state = torch.get_rng_state()
        original(self, loader)  # draws _base_seed from the global generator
        torch.set_rng_state(state)

    dataloader._BaseDataLoaderIter.__init__ = __init__  # type: ignore[method-assign]


def restore_rng_before_fetch() -> None:
    """H1: on a mid-epoch resume, the Trainer restores rng_state.pth before the resumed epoch's iterator exists,
    and its own restore after the first fetch is skipped."""
    from transformers import Trainer

    original = Trainer._run_epoch
    signature = inspect.signature(original)

    @functools.wraps(original)
    def _run_epoch(self: Any, *args: Any, **kwargs: Any) -> Any:
        given = signature.bind(self, *args, **kwargs).arguments
        mid_epoch = (
            given["epoch"] == given["epochs_trained"]
            and given["resume_from_checkpoint"] is not None
            and given["steps_trained_in_current_epoch"] > 0
            and not self.args.ignore_data_skip
        )
        if not mid_epoch:
            return original(self, *args, **kwargs)
        self._load_rng_state(given["resume_from_checkpoint"])
        self._load_rng_state = lambda checkpoint: None  # the Trainer's own call, after the first fetch
        try:
            return original(self, *args, **kwargs)
        finally:
            del self._load_rng_state

    Trainer._run_epoch = _run_epoch  # type: ignore[method-assign]


def start_epoch_after_last_batch_restart() -> None:
    """L3: when reset() already closed the epoch a checkpoint was written in (at its last batch), the next
    epoch is started as a fresh one: counted, and its on_train_epoch_start hooks run."""
    from lightning.pytorch.loops.fit_loop import RestartStage, _FitLoop

    original = _FitLoop.on_advance_start

    @functools.wraps(original)
    def on_advance_start(self: Any) -> None:
        current = self.epoch_progress.current
        if self.restarted_mid_epoch and current.completed == current.ready:
            self._restart_stage = RestartStage.NONE
        original(self)

    _FitLoop.on_advance_start = on_advance_start  # type: ignore[method-assign]


PATCHES: dict[str, Callable[[], None]] = {
    "A3": yield_without_lookahead,
    "A4": keep_global_generator_at_iterator_start,
    "H1": restore_rng_before_fetch,
    "H2": keep_global_generator_at_iterator_start,
}
PATCHES["L3"] = start_epoch_after_last_batch_restart
