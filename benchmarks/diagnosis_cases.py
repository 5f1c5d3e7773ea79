"""The diagnosis corpus's cases (benchmarks/diagnosis.py): each trainer of tests/trainers/corpus/, how it is
verified, and what a perfect verifier says about it. The second corpus, trainers written in other styles than
ours (tests/trainers/corpus_other/), is benchmarks/diagnosis_other_cases.py."""

import shlex
from dataclasses import dataclass
from typing import Any

from benchmarks.helpers import REPO

OURS, OTHER = "ours", "other"  # the two corpora: our trainers, and trainers written in users' styles
FOLDERS = {OURS: "tests/trainers/corpus", OTHER: "tests/trainers/corpus_other"}

NONE, NOT_DETERMINISTIC, NO_POWER = "none", "not-deterministic", "no-power"  # the causes that are not a part
# The non-determinism cases are scored on what they test: that no part is blamed on a trainer that differs from
# itself (by default such a trainer is judged by its restore and its measured spread instead: docs/checks.md).
STRICT = ("--require-deterministic",)
UNKNOWN = "unknown"  # a diagnosis that names no part


@dataclass(frozen=True, kw_only=True)
class Case:
    """One corpus entry: a trainer, how it is verified, and what a perfect verifier says about it."""

    name: str  # "<family>/<variant>", unique
    script: str  # file in the corpus's folder (FOLDERS)
    args: tuple[str, ...] = ()  # the trainer's own flags: --bug NAME, ...
    verify: tuple[str, ...] = ()  # extra verify_resume.py flags: --faults all, --interrupt-at 7, ...
    exit: int  # the right verdict: 0 passed, 1 a comparison failed, 2 could not complete
    cause: str  # the part (the trainer's own name) whose state the resume lost, or NONE, NOT_DETERMINISTIC, NO_POWER
    right: frozenset[str] = frozenset()  # a part cause's right diagnoses (default: the cause); may hold UNKNOWN
    faults: tuple[str, ...] = ()  # with --faults: the parts whose fault runs must each be diagnosed by their own name
    why: str  # what the trainer does wrong (or right), one line
    corpus: str = OURS  # OURS (tests/trainers/corpus/) or OTHER (tests/trainers/corpus_other/)

    def __post_init__(self) -> None:
        if self.exit not in (0, 1, 2):
            raise ValueError(f"{self.name}: exit must be 0, 1 or 2, not {self.exit}")
        if self.corpus not in FOLDERS:
            raise ValueError(f"{self.name}: corpus must be one of {', '.join(FOLDERS)}, not {self.corpus!r}")
        if not (REPO / self.folder / self.script).is_file():
            raise ValueError(f"{self.name}: script {self.folder}/{self.script} does not exist")
        if self.cause in (NONE, NOT_DETERMINISTIC, NO_POWER) and self.right:
            raise ValueError(f"{self.name}: right is only for a part cause, not {self.cause!r}")
        if self.cause == NONE and self.exit != 0:
            raise ValueError(f"{self.name}: a control (cause 'none') must expect exit 0")
        if self.faults and "--faults" not in self.verify:
            raise ValueError(f"{self.name}: faults are scored only when --faults is passed")

    @property
    def folder(self) -> str:
        return FOLDERS[self.corpus]

    @property
    def family(self) -> str:
        return self.name.split("/")[0]

    @property
    def is_control(self) -> bool:
        return self.cause == NONE

    @property
    def right_parts(self) -> frozenset[str]:
        """The part names a right diagnosis may name (UNKNOWN aside)."""
        if self.cause in (NONE, NOT_DETERMINISTIC, NO_POWER):
            return frozenset()
        return (self.right or frozenset({self.cause})) - {UNKNOWN}

    def train_cmd(self, python: str = "python") -> str:
        return shlex.join([python, "-B", f"{self.folder}/{self.script}", *self.args])


def _bug(script: str, bug: str, cause: str, why: str, **more: Any) -> Case:
    family = script.removesuffix(".py")
    return Case(name=f"{family}/{bug}", script=script, args=("--bug", bug), exit=1, cause=cause, why=why, **more)


def _control(script: str, why: str, variant: str = "fixed", **more: Any) -> Case:
    family = script.removesuffix(".py")
    return Case(name=f"{family}/{variant}", script=script, exit=0, cause=NONE, why=why, **more)


OWN_PARTS = ("net", "opt", "ema", "scaler", "order", "rng-shuffle", "rng-aug", "rng-dropout")

CASES: tuple[Case, ...] = (
    # 1. DataLoader workers: the loader generator decides the permutation and the workers' seeds
    _bug("dataloader_workers.py", "lose-loader-generator", "rng-loader", "epoch and batch saved, loader generator not"),
    _control("dataloader_workers.py", "the loader generator saved as the epoch's iterator started"),
    # 2. torchdata's StatefulDataLoader
    _bug("stateful_loader.py", "lose-loader", "loader", "StatefulDataLoader.state_dict() not saved"),
    _bug(
        "stateful_loader.py",
        "loader-state-only",
        "loader",
        "state_dict() saved and loaded as documented: the restore is one draw of its generator behind",
    ),
    _control("stateful_loader.py", "state_dict() and the shuffle generator's live state, set after iter()"),
    # 3. gradient accumulation
    _bug("grad_accum.py", "lose-micro-step", "micro-step", "update count saved, micro-step counter not"),
    _control("grad_accum.py", "micro-step counter saved"),
    # 4. EMA of the weights
    _bug("ema.py", "lose-ema", "ema", "EMA not saved: a fresh average from the restored weights"),
    _bug("ema.py", "lose-ema-updates", "ema", "EMA weights saved, its update counter (decay warm-up) not"),
    _control("ema.py", "EMA weights and counter saved"),
    # 5. mean teacher through AveragedModel
    _bug("swa_teacher.py", "lose-teacher", "teacher", "AveragedModel teacher not saved"),
    _bug(
        "swa_teacher.py", "lose-n-averaged", "teacher", "teacher.module saved without n_averaged: first update copies"
    ),
    _control("swa_teacher.py", "AveragedModel.state_dict() saved, n_averaged included"),
    # 6. GradScaler on CPU
    _bug("grad_scaler.py", "lose-scaler", "scaler", "GradScaler not saved: only the scale differs"),
    _control("grad_scaler.py", "GradScaler.state_dict() saved"),
    # 7. ReduceLROnPlateau: its state holds mode_worse = inf
    _bug("plateau.py", "lose-scheduler", "scheduler", "ReduceLROnPlateau not saved"),
    _control("plateau.py", "ReduceLROnPlateau saved; its state_dict reports inf in both runs"),
    # 8. warm-up schedule
    _bug("warmup.py", "recreate-scheduler", "scheduler", "SequentialLR warm-up re-created, not loaded"),
    _control("warmup.py", "SequentialLR warm-up loaded"),
    # 9. non-persistent buffers
    _bug("nonpersistent_buffer.py", "lose-buffers", "model", "running-mean buffers (persistent=False) not saved"),
    _control("nonpersistent_buffer.py", "non-persistent buffers saved beside the state_dict"),
    # 10. a dropout generator the trainer does not know about
    _bug(
        "dropout_generator.py",
        "unsaved-generator",
        "rng-dropout",
        "mask generator neither saved, reported nor declared",
        right=frozenset({UNKNOWN, "rng-dropout"}),
    ),
    _control("dropout_generator.py", "mask generator saved, reported and declared as rng-dropout"),
    # 11. non-determinism before the resume point
    _bug(
        "early_nondeterminism.py",
        "hash-order",
        NOT_DETERMINISTIC,
        "input columns in the order of a set of strings",
        verify=STRICT,
    ),
    _bug(
        "early_nondeterminism.py",
        "unseeded",
        NOT_DETERMINISTIC,
        "shuffle generator created without a seed",
        verify=STRICT,
    ),
    _control("early_nondeterminism.py", "columns sorted, generator seeded"),
    # 12. non-determinism only after the resume point
    _bug(
        "late_nondeterminism.py",
        "hash-order",
        NOT_DETERMINISTIC,
        "after k, batches by class in set order",
        verify=STRICT,
    ),
    _bug(
        "late_nondeterminism.py",
        "unseeded-noise",
        NOT_DETERMINISTIC,
        "after k, gradient noise from an unseeded generator",
        verify=STRICT,
    ),
    _control("late_nondeterminism.py", "classes sorted, noise generator seeded"),
    # 13. optimizer re-created on resume (short state keys: net, opt, sched)
    _bug("optimizer_recreated.py", "recreate-optimizer", "optimizer", "fresh AdamW after loading the weights"),
    _control("optimizer_recreated.py", "AdamW loaded"),
    # 14. next draws under next.draws
    _bug("next_draws_key.py", "lose-numpy", "rng-numpy", "augmentation generator left out of the restore"),
    _control("next_draws_key.py", "every generator restored; draws reported under next.draws"),
    # 15. a negative control without power
    Case(
        name="no_power/k5",
        script="no_power.py",
        exit=1,
        cause=NO_POWER,
        why="correct loop; its only generator is first drawn at update 6, so k = 5 cannot show a lost one",
    ),
    Case(
        name="no_power/never",
        script="no_power.py",
        args=("--dropout-from", "100"),
        exit=1,
        cause=NO_POWER,
        why="correct loop whose generator is never drawn in 10 updates",
    ),
    Case(
        name="no_power/k7",
        script="no_power.py",
        verify=("--interrupt-at", "7"),
        exit=0,
        cause=NONE,
        why="the same loop interrupted after its generator was drawn",
    ),
    # 16. the trainer's own part names, --faults all
    _bug("own_parts.py", "lose-aug", "rng-aug", "jitter generator left out of the restore"),
    _control(
        "own_parts.py",
        "every part restored; --faults all must ask for its own parts and name each",
        variant="faults-all",
        verify=("--faults", "all"),
        faults=OWN_PARTS,
    ),
    _control(
        "own_parts.py",
        "every part restored; its own parts named in --faults: each fault must be diagnosed by its own name",
        variant="faults-listed",
        verify=("--faults", ",".join(OWN_PARTS)),
        faults=OWN_PARTS,
    ),
    # more: sampler epoch, restore order, nanoGPT's re-seeding
    _bug("sampler_epoch.py", "skip-set-epoch", "data", "resumed epoch iterated without sampler.set_epoch()"),
    _control("sampler_epoch.py", "sampler.set_epoch(epoch) before the resumed epoch's iterator"),
    _bug(
        "scheduler_order.py",
        "build-after-load",
        "scheduler",
        "LambdaLR built after optimizer.load_state_dict(): the restored lr overwritten",
    ),
    _control("scheduler_order.py", "LambdaLR built before the optimizer's load"),
    _bug("reseed_on_resume.py", "reseed", "rng-torch", "nanoGPT: manual_seed at start-up, no RNG state saved"),
    _control("reseed_on_resume.py", "torch's generator state saved and restored last"),
)


def select(only: str | None, cases: tuple[Case, ...] = CASES) -> list[Case]:
    """The cases `--only` names among `cases`, by case or by family; all of them without it."""
    if not only:
        return list(cases)
    wanted = [name.strip() for name in only.split(",") if name.strip()]
    chosen = [c for c in cases if c.name in wanted or c.family in wanted]
    unknown = [w for w in wanted if not any(c.name == w or c.family == w for c in cases)]
    if unknown:
        raise SystemExit(f"--only: no case or family {', '.join(unknown)}; cases: {', '.join(c.name for c in cases)}")
    return chosen
