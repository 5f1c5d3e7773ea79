"""The second diagnosis corpus's cases (benchmarks/diagnosis.py --corpus other): the trainers of
tests/trainers/corpus_other/, written in users' styles rather than ours, how each is verified, and its true cause.

Ten of its twelve trainers use no part of resumeproof (nine speak the protocol by hand through
tests/trainers/corpus_other/_plain.py, one is Accelerate's own resume path); two are built on the kit in their own
layout. Four of its bugs are self-correcting: the lost state comes back by itself, so that the end state says
nothing of it (the GradScaler twice, the plateau counters, the decaying statistics).
"""

from typing import Any

from benchmarks.diagnosis_cases import NONE, OTHER, Case

ACCELERATE = ("--allow-unsafe-pickle", "random_states_*.pkl")  # Accelerate pickles NumPy's generator state
N12_K6, N12_K5 = ("--steps", "12", "--interrupt-at", "6"), ("--steps", "12", "--interrupt-at", "5")


def _bug(script: str, bug: str, cause: str, why: str, **more: Any) -> Case:
    family = script.removesuffix(".py")
    name = f"{family}/{bug}"
    return Case(name=name, script=script, args=("--bug", bug), exit=1, cause=cause, why=why, corpus=OTHER, **more)


def _control(script: str, why: str, variant: str = "fixed", **more: Any) -> Case:
    family = script.removesuffix(".py")
    return Case(name=f"{family}/{variant}", script=script, exit=0, cause=NONE, why=why, corpus=OTHER, **more)


OTHER_CASES: tuple[Case, ...] = (
    # 1. a DataLoader with two workers and random augmentation drawn in the Dataset
    _bug(
        "workers_augment.py",
        "skip-indices",
        "loader",
        "trained batches skipped in the sampler, never fetched: the first resumed batch goes to a fresh worker",
    ),
    _bug(
        "workers_augment.py",
        "live-generator",
        "loader",
        "loader generator saved after the epoch's iterator drew its seed and permutation from it",
    ),
    _control("workers_augment.py", "loader generator as the epoch started; trained batches fetched and dropped"),
    # 2. a generator consumed between its restore and its first use
    _bug(
        "iterator_after_restore.py",
        "iter-after-restore",
        "rng-torch",
        "Megatron-Bridge: RNG restored in load_checkpoint, then the iterator draws its base seed from torch's",
    ),
    _control("iterator_after_restore.py", "RNG restored after the iterator is built"),
    _bug(
        "collate_masking.py",
        "restore-then-skip",
        "rng-torch",
        "RNG restored before the replayed batches, whose collate masks draw from it",
    ),
    _control("collate_masking.py", "RNG restored after the replayed batches"),
    # 3. gradient accumulation
    _bug(
        "accum_skip.py",
        "skip-updates",
        "data",
        "skips one micro-batch per update done in the epoch instead of three",
    ),
    _bug("accum_skip.py", "epoch-only", "data", "only the epoch saved: the resumed epoch starts over"),
    _control("accum_skip.py", "skips three micro-batches per update done in the epoch"),
    # 4. an EMA: AveragedModel swapped in for evaluation, and Accelerate's registered object
    _bug("swa_ema.py", "save-swapped", "net", "checkpoint written while the averaged weights are swapped in"),
    _bug(
        "swa_ema.py", "half-precision-ema", "swa", "AveragedModel saved in float16 (YOLOv5's EMA), loaded into float64"
    ),
    _control("swa_ema.py", "checkpoint written before the swap, the average in full precision"),
    _bug(
        "accelerate_ema.py",
        "ema-not-registered",
        "ema",
        "EMA not passed to register_for_checkpointing: save_state leaves it out",
        verify=ACCELERATE,
    ),
    _bug(
        "accelerate_ema.py",
        "skip-every-epoch",
        "data",
        "skip_first_batches rebinds the loader: every later epoch skips those batches too",
        verify=ACCELERATE,
    ),
    _control("accelerate_ema.py", "EMA registered; only the first resumed epoch skips", verify=ACCELERATE),
    # 5. a float16 GradScaler on CPU whose lost state comes back by itself (self-correcting)
    _bug(
        "amp_scaler.py",
        "scaler-not-saved",
        "amp",
        "fresh scaler at 2**16: four skipped updates, then the continuous run's scale and tracker",
    ),
    _bug(
        "amp_scaler.py",
        "scale-only",
        "amp",
        "GradScaler(init_scale=saved scale): tracker lost, growth two updates late, then equal again",
        verify=N12_K6,
    ),
    _control("amp_scaler.py", "scaler.state_dict() saved and loaded"),
    _control("amp_scaler.py", "the same, at 12 updates interrupted at 6", variant="fixed-n12-k6", verify=N12_K6),
    # 6. LR schedules: ReduceLROnPlateau on accuracy (self-correcting), OneCycle, a chained warm-up
    _bug(
        "plateau_accuracy.py",
        "fresh-scheduler",
        "sched",
        "plateau scheduler not saved: its counters come back, the lr halvings in between do not",
    ),
    _control("plateau_accuracy.py", "plateau scheduler saved and loaded"),
    _bug(
        "onecycle.py",
        "last-epoch",
        "sched",
        "OneCycleLR rebuilt with last_epoch=global_step, as its docs read: one update ahead",
    ),
    _control("onecycle.py", "OneCycleLR loaded"),
    _bug(
        "warmup_cosine.py",
        "lose-warmup",
        "warmup",
        "chained LinearLR not saved: its warm-up multiplies the restored lr again",
    ),
    _control("warmup_cosine.py", "both chained schedulers saved"),
    # 7. model buffers: BatchNorm statistics, a non-persistent decaying buffer (self-correcting)
    _bug(
        "bn_buffers.py",
        "params-only",
        "net",
        "named_parameters() saved, loaded with strict=False: every buffer as built",
    ),
    _bug(
        "bn_buffers.py",
        "nonpersistent-stats",
        "net",
        "normalizer statistics persistent=False: lost, then decayed back to 1e-14",
        verify=N12_K5,
    ),
    _control("bn_buffers.py", "state_dict() saved, every buffer persistent"),
    _control("bn_buffers.py", "the same, at 12 updates interrupted at 5", variant="fixed-n12-k5", verify=N12_K5),
    # 8. a dropout generator of the trainer's own, held by the model
    _bug(
        "dropout_own_gen.py",
        "rebind-generator",
        "rng-dropout",
        "saved state loaded into a new generator bound to the trainer's name; the model keeps the old one",
    ),
    _bug(
        "dropout_own_gen.py",
        "reseed-from-step",
        "rng-dropout",
        "mask generator seeded with seed + step on resume instead of restored",
    ),
    _control("dropout_own_gen.py", "mask generator restored in place"),
)
