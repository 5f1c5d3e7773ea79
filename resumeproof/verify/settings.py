"""What one verification, or one chaos run, is asked to do: parsed from the command line once and checked.

Each rule the command line checks is checked again by the settings object itself, with the same words: a
value built in code is held to it as well.
"""

import math
import shlex
from dataclasses import dataclass, replace
from enum import StrEnum
from pathlib import Path
from typing import ClassVar

from resumeproof.common import observation
from resumeproof.common.allowances import NONE_ALLOWED, Allowances
from resumeproof.common.errors import ResumeproofError
from resumeproof.common.protocol import FLAT, MODEL, PART_NAME
from resumeproof.verify.run.launch import LAUNCHERS, LOCAL_LAUNCH, PREEMPTS, RAY, SIGNAL, SLURM, Launch, SlurmSignal

DEFAULT_POINT = 5  # the default interruption point: mid-epoch for the bundled trainer


class PointsFrom(StrEnum):
    """Which of the continuous run's events `--interrupt-at` reads its points off."""

    EPOCHS = "epochs"  # every epoch boundary within N and one point inside each epoch
    CHECKPOINTS = "checkpoints"  # after each update the continuous run wrote a checkpoint at (--observe)


EPOCHS, CHECKPOINTS = PointsFrom.EPOCHS, PointsFrom.CHECKPOINTS


@dataclass(frozen=True)
class Given:
    """--interrupt-at k, a list of k or `all`: the interruption points, the primary one first."""

    points: tuple[int, ...]


@dataclass(frozen=True)
class ReadOff:
    """--interrupt-at epochs or checkpoints: the points the continuous run shows (empty until it ran)."""

    source: PointsFrom
    points: tuple[int, ...] = ()


InterruptAt = Given | ReadOff  # --interrupt-at, one of its two forms


ALL = "all"  # --faults all: the parts the trainer declares (meta.parts), else the standard set
# The placeholders of an unmodified script's commands (--observe, docs/observe.md), and why each is needed.
RUN, STEPS, CHECKPOINT, STEP = "{run}", "{steps}", "{checkpoint}", "{step}"
# A script that counts its length in epochs (--epochs E): `{epochs}` its length, `{epoch}` in --checkpoint the 0-based
# index of the last epoch the interrupted run completed; N and the updates per epoch are read off the continuous run.
RUN_EPOCHS, EPOCH = "{epochs}", "{epoch}"
NEEDED = {
    RUN: "each process needs a directory of its own",
    STEPS: "every process must be told the same run length N (the observer stops the interrupted one)",
    RUN_EPOCHS: "with --epochs every process must be told the same run length in epochs",
    CHECKPOINT: "the resuming process must be told which checkpoint to resume from",
}

FROM_RUN_INSIDE = "with --resume-from-run the checkpoint must lie in {run}, the folder each resume gets a copy of"


class SettingsError(ResumeproofError):
    """An option value that cannot be verified; `flag` names the option."""

    def __init__(self, flag: str, message: str) -> None:
        super().__init__(f"{flag}: {message}")
        self.flag, self.message = flag, message


@dataclass(frozen=True, kw_only=True)
class Trainer:
    """What only a protocol trainer's verification is told: its checkpoints are the protocol's files, written where
    the verifier says, and its restarts are the protocol's flags (verify/plan/trainer.py)."""

    segments: tuple[tuple[int, ...], ...] = ()  # chains: updates per process, summing to N
    cadence: int = 0  # also run continuous with --checkpoint-every CADENCE (0: no)
    repeat: bool = False  # --repeat: run the continuous run twice even when every comparison passes
    observe: bool = True  # the observer watches every trajectory (--no-observe: the summaries alone)
    plot: bool = False  # write verification.png
    allow: Allowances = NONE_ALLOWED  # checkpoint files accepted although they can run code or cannot be read
    torch_load: bool = False  # also load every checkpoint with torch.load(weights_only=True)


@dataclass(frozen=True, kw_only=True)
class Script:
    """What only an unmodified script's verification (--observe) is told: it is judged from the observer's records
    alone (verify/plan/script.py), and its commands take placeholders where a protocol trainer takes flags."""

    checkpoint: str  # the interrupted run's checkpoint, `{run}` and `{step}` (--checkpoint)
    stop: str = observation.EXIT  # how the observer ends the interrupted run (observation.STOPS)
    resume_from_run: bool = False  # each resume's `{run}`: a fresh copy of the interrupted run's folder
    epochs: int = 0  # --epochs E: fills {epochs}; N (steps 0 until then) is read off the continuous run
    epoch_updates: int = 0  # with --epochs: updates per epoch, N / E, read off the continuous run (0 until then)
    # What a script's verification is never asked for (the command refuses the flags): its files are judged by the
    # observer's records, which no plot, allowance, torch.load or chain of segments adds to.
    segments: ClassVar[tuple[tuple[int, ...], ...]] = ()
    plot: ClassVar[bool] = False
    allow: ClassVar[Allowances] = NONE_ALLOWED
    torch_load: ClassVar[bool] = False


@dataclass(frozen=True, kw_only=True)
class Settings:
    """One verification: its core, where its points come from, where it runs, and what it verifies (a trainer that
    speaks the protocol, or an unmodified script), each typed by what it configures."""

    output: Path  # run directory of this verification; must not exist
    steps: int  # N: updates of the continuous run (0 with --epochs until the continuous run ends)
    interrupt_at: InterruptAt  # the interruption points k, given or read off the continuous run
    atol: float  # absolute tolerance, no relative one
    train_cmd: str  # command line the protocol flags are appended to
    jobs: int  # processes at once
    timeout: float  # seconds per trajectory before it is killed
    faults: tuple[str, ...] = ()  # parts to omit, one resume each
    resume_cmd: str | None = None  # --resume-cmd: what every resuming process runs instead (another world size)
    require_deterministic: bool = False  # a trainer that differs from itself fails (else: the restore, the spread)
    launch: Launch = LOCAL_LAUNCH  # where the trajectories run: --launcher, --slurm-*, --ray-* (docs/cluster.md)
    reuse_runs: Path | None = None  # an earlier verification whose identical runs are copied (verify/run/reuse.py)
    subject: Trainer | Script = Trainer()  # what is verified, with the options only it is told

    def __post_init__(self) -> None:
        if not (self.epochs and self.steps == 0):  # with --epochs, N is unknown until the continuous run ends
            at_least("--steps", self.steps, 2)
        at_least("--jobs", self.jobs, 1)
        if not (math.isfinite(self.atol) and self.atol >= 0):
            raise SettingsError("--atol", f"{self.atol} must be a finite number >= 0")
        if not self.timeout > 0:  # NaN included
            raise SettingsError("--timeout", f"{self.timeout} must be a number of seconds > 0")
        if self.steps and (self.points or not self.deferred):
            _check_points(",".join(map(str, self.points)), self.points, self.steps)
        parse_train_cmd(self.train_cmd)
        _check_launch(self.launch)
        if self.resume_cmd is not None:
            parse_train_cmd(self.resume_cmd, "--resume-cmd")
        _check_epochs(self)
        _check_reuse(self)
        if isinstance(self.subject, Script):
            _check_script(self, self.subject)
        else:
            _check_trainer(self, self.subject)

    @property
    def points(self) -> tuple[int, ...]:
        """The interruption points, the primary one first (none while they are still to be read off)."""
        return self.interrupt_at.points

    def with_points(self, found: list[int] | tuple[int, ...]) -> "Settings":
        """These settings with the points read off the continuous run, the primary one first."""
        return replace(self, interrupt_at=replace(self.interrupt_at, points=primary_first(found)))

    @property
    def read_off(self) -> PointsFrom | None:
        """Which of the continuous run's events the points are read off; None where they are given."""
        return self.interrupt_at.source if isinstance(self.interrupt_at, ReadOff) else None

    @property
    def deferred(self) -> bool:
        """Whether the points, or N, are still to be read off the continuous run."""
        unread = self.read_off is not None and not self.points
        return unread or (self.epochs > 0 and not self.steps)

    @property
    def epochs(self) -> int:
        """--epochs (a script's alone): 0 where the run's length is given in updates."""
        return self.subject.epochs if isinstance(self.subject, Script) else 0

    @property
    def primary(self) -> int:
        """The point the negative control and the faults resume from."""
        return self.points[0]

    @property
    def command(self) -> list[str]:
        return shlex.split(self.train_cmd)

    @property
    def resume_command(self) -> list[str]:
        """The command of every process that resumes a checkpoint: --resume-cmd, else --train-cmd."""
        return shlex.split(self.resume_template)

    @property
    def resume_template(self) -> str:
        return self.resume_cmd or self.train_cmd

    @property
    def trainer(self) -> Trainer:
        """A protocol trainer's own settings, where the verification is of one (verify/plan/trainer.py)."""
        assert isinstance(self.subject, Trainer), "only a protocol trainer's verification has them"
        return self.subject

    @property
    def scripted(self) -> Script:
        """A script's own settings, where the verification is of one (verify/plan/script.py)."""
        assert isinstance(self.subject, Script), "only a script's verification has them"
        return self.subject

    @property
    def observed(self) -> bool:
        """Whether the observer watches the trajectories: a script's always, a trainer's unless --no-observe."""
        return isinstance(self.subject, Script) or self.subject.observe


def _check_trainer(s: Settings, trainer: Trainer) -> None:
    """A protocol trainer's own options: chains that sum to N, a cadence, faults named as parts."""
    at_least("--check-cadence", trainer.cadence, 0)
    for chain in trainer.segments:
        _check_chain(",".join(map(str, chain)), chain, s.steps)
    _check_parts(s.faults)


def _check_script(s: Settings, script: Script) -> None:
    """What an unmodified script's verification needs: its commands' placeholders, faults it can block."""
    if s.resume_cmd is None:
        raise SettingsError("--resume-cmd", "is required with --observe")
    length = RUN_EPOCHS if s.epochs else STEPS
    from_run = script.resume_from_run
    needs = (
        ("--train-cmd", s.train_cmd, (RUN, length)),
        ("--resume-cmd", s.resume_cmd, (RUN, length) if from_run else (RUN, length, CHECKPOINT)),
        ("--checkpoint", script.checkpoint, (RUN,)),
    )
    for flag, text, placeholders in needs:
        missing = [p for p in placeholders if p not in text]
        if missing:
            raise SettingsError(flag, f"{text!r} lacks {', '.join(missing)}: {NEEDED[missing[0]]}")
        parse_train_cmd(text, flag)
    if from_run and not script.checkpoint.startswith(RUN):
        raise SettingsError("--checkpoint", f"{script.checkpoint!r}: {FROM_RUN_INSIDE}")
    unknown = [p for p in s.faults if p not in observation.BLOCKABLE]
    if unknown:
        among = ", ".join(observation.BLOCKABLE)
        raise SettingsError("--faults", f"{unknown[0]!r}: with --observe, all or among {among}")
    if script.stop not in observation.STOPS:
        raise SettingsError("--stop", f"{script.stop!r}: one of {', '.join(observation.STOPS)}")


def _check_launch(launch: Launch) -> None:
    """A launcher this verifier knows, and --slurm-* / --ray-* flags only for their launcher, each within its range."""
    if launch.launcher not in LAUNCHERS:
        raise SettingsError("--launcher", f"{launch.launcher!r}: one of {', '.join(LAUNCHERS)}")
    own = {
        SLURM: {
            "--slurm-partition": launch.partition != LOCAL_LAUNCH.partition,
            "--slurm-nodes": launch.nodes != LOCAL_LAUNCH.nodes,
            "--slurm-gpus-per-node": launch.gpus_per_node != LOCAL_LAUNCH.gpus_per_node,
            "--slurm-time": launch.minutes != LOCAL_LAUNCH.minutes,
        },
        RAY: {
            "--ray-address": launch.ray_address != LOCAL_LAUNCH.ray_address,
            "--ray-cpus-per-job": launch.cpus_per_job != LOCAL_LAUNCH.cpus_per_job,
            "--ray-gpus-per-job": launch.gpus_per_job != LOCAL_LAUNCH.gpus_per_job,
        },
    }
    for launcher, flags in own.items():
        given = [flag for flag, differs in flags.items() if differs]
        if launch.launcher != launcher and given:
            raise SettingsError(given[0], f"applies only with --launcher {launcher} (docs/cluster.md)")
    if launch.partition is not None and not launch.partition.strip():
        raise SettingsError("--slurm-partition", "is empty")
    at_least("--slurm-nodes", launch.nodes, 1)
    at_least("--slurm-gpus-per-node", launch.gpus_per_node, 0)
    if launch.minutes is not None:
        at_least("--slurm-time", launch.minutes, 1)
    if launch.ray_address is not None and not launch.ray_address.strip():
        raise SettingsError("--ray-address", "is empty")
    at_least("--ray-cpus-per-job", launch.cpus_per_job, 0)
    at_least("--ray-gpus-per-job", launch.gpus_per_job, 0)
    _check_preempt(launch)


def _check_preempt(launch: Launch) -> None:
    """--preempt: a Slurm job of one node; --slurm-signal only for the preemption it names."""
    if launch.preempt is not None and launch.preempt not in PREEMPTS:
        raise SettingsError("--preempt", f"{launch.preempt!r}: one of {', '.join(PREEMPTS)}")
    if launch.preempt is not None and launch.launcher != SLURM:
        raise SettingsError("--preempt", "applies only with --launcher slurm: Slurm preempts the job (docs/cluster.md)")
    if launch.preempt is not None and launch.nodes > 1:
        raise SettingsError("--preempt", "a job of one node only: a preempted --slurm-nodes job is not built yet")
    if launch.slurm_signal != LOCAL_LAUNCH.slurm_signal and launch.preempt != SIGNAL:
        raise SettingsError("--slurm-signal", f"applies only with --preempt {SIGNAL}")


def _check_reuse(s: Settings) -> None:
    if s.reuse_runs is None:
        return
    if not s.observed:
        raise SettingsError("--reuse-runs", "needs the observer: its records are what show the code unchanged")
    if s.reuse_runs.resolve() == s.output.resolve():
        raise SettingsError("--reuse-runs", f"{s.reuse_runs} is this verification's own --output")


def _check_epochs(s: Settings) -> None:
    """--epochs, {epochs}, {epoch} and --interrupt-at checkpoints: only where the run can say what they mean."""
    from_checkpoints = s.read_off is CHECKPOINTS
    if from_checkpoints and not isinstance(s.subject, Script):
        raise SettingsError("--interrupt-at", "applies only with --observe")
    if s.epochs and s.steps and s.steps != s.epochs * s.scripted.epoch_updates:
        raise SettingsError("--steps", "does not apply with --epochs: N is read off the continuous run")
    commands = (("--train-cmd", s.train_cmd), ("--resume-cmd", s.resume_cmd or ""))
    for flag, text in commands:
        if RUN_EPOCHS in text and not s.epochs:
            raise SettingsError("--epochs", f"is required: {flag} {text!r} takes {RUN_EPOCHS}")
        if STEPS in text and s.epochs:
            raise SettingsError(flag, f"{text!r} takes {STEPS}: with --epochs the run length is {RUN_EPOCHS}")
    pattern = s.subject.checkpoint if isinstance(s.subject, Script) else ""
    if EPOCH in pattern and not s.epochs:
        raise SettingsError(
            "--checkpoint",
            f"{pattern!r} takes {EPOCH} without --epochs: the updates per epoch are read off a run "
            f"told its length in epochs ({RUN_EPOCHS} in the commands)",
        )
    if from_checkpoints and STEP not in pattern and EPOCH not in pattern:
        raise SettingsError(
            "--interrupt-at",
            f"{CHECKPOINTS} needs {STEP} or {EPOCH} in --checkpoint: the name {pattern!r} does not "
            "say after which update the continuous run wrote it",
        )


def parse_script(checkpoint: str | None, stop: str, resume_from_run: bool, epochs: int = 0) -> Script:
    """--observe's own options: --checkpoint is required, the rest is checked with the commands (`Settings`)."""
    if checkpoint is None:
        raise SettingsError("--checkpoint", "is required with --observe")
    return Script(checkpoint=checkpoint, stop=stop, resume_from_run=resume_from_run, epochs=epochs)


def parse_train_cmd(train_cmd: str, flag: str = "--train-cmd") -> str:
    try:
        if not shlex.split(train_cmd):
            raise SettingsError(flag, "is empty")
    except ValueError as err:
        raise SettingsError(flag, f"{train_cmd!r}: {err}") from None
    return train_cmd


def parse_slurm_signal(spec: str) -> SlurmSignal:
    """--slurm-signal: '[B:]SIG[@SECONDS]', as sbatch's --signal reads it."""
    try:
        return SlurmSignal.parse(spec)
    except ValueError as err:
        raise SettingsError("--slurm-signal", str(err)) from None


def parse_interrupt_at(spec: str, steps: int) -> InterruptAt:
    """'5', '1,4,6,9', 'all' (every k from 1 to N-1): given; 'epochs' or 'checkpoints': read off the continuous run.
    `steps` 0: N is unknown until the continuous run ends (--epochs), and given points are checked then."""
    if spec in (EPOCHS, CHECKPOINTS):
        return ReadOff(PointsFrom(spec))
    if not steps:
        if spec == ALL:
            raise SettingsError("--interrupt-at", "'all' needs N before the run; with --epochs give k, or checkpoints")
        return Given(primary_first(_ints(spec, "--interrupt-at")))
    points = list(range(1, steps)) if spec == ALL else _ints(spec, "--interrupt-at")
    _check_points(spec, points, steps)
    return Given(primary_first(points))


def _check_points(spec: str, points: list[int] | tuple[int, ...], steps: int) -> None:
    if not points or any(not 1 <= k < steps for k in points) or len(set(points)) != len(points):
        raise SettingsError("--interrupt-at", f"{spec!r}: distinct points k with 1 <= k < --steps {steps}")


def primary_first(points: list[int] | tuple[int, ...]) -> tuple[int, ...]:
    """The primary point (the default 5 when it is among them, else the first given) goes first."""
    primary = DEFAULT_POINT if DEFAULT_POINT in points else points[0]
    return (primary, *(k for k in points if k != primary))


def parse_faults(spec: str | None, script: bool = False) -> tuple[str, ...]:
    """'all' (the parts the trainer declares, known once it ran; a script's: every restore the observer can block),
    a list of parts its --omit accepts, and/or 'flat'."""
    if not spec:
        return ()
    if script and spec == ALL:
        return observation.BLOCKABLE
    parts = [item.strip() for item in spec.split(",") if item.strip() or not script]
    if not script:
        _check_parts(parts)
    return tuple(dict.fromkeys(parts))


def _check_parts(parts: list[str] | tuple[str, ...]) -> None:
    malformed = [part for part in parts if not PART_NAME.fullmatch(part)]
    if malformed:
        shown = ", ".join(repr(part) for part in malformed)
        raise SettingsError("--faults", f"{shown}: a part is a lower-case name like {MODEL!r}; or {ALL}, {FLAT}")


def parse_segments(specs: tuple[str, ...], steps: int) -> tuple[tuple[int, ...], ...]:
    chains = tuple(tuple(_ints(spec, "--segments")) for spec in specs)
    for spec, chain in zip(specs, chains, strict=True):
        _check_chain(spec, chain, steps)
    return chains


def _check_chain(spec: str, chain: tuple[int, ...], steps: int) -> None:
    if len(chain) < 2 or min(chain) < 1 or sum(chain) != steps:
        raise SettingsError("--segments", f"{spec!r}: at least two counts >= 1 that sum to --steps {steps}")


def at_least(flag: str, value: float, minimum: float) -> None:
    """The rule behind a flag with a minimum (NaN is below any)."""
    if not value >= minimum:
        raise SettingsError(flag, f"{value} is not >= {minimum}")


def _ints(spec: str, flag: str) -> list[int]:
    try:
        return [int(item) for item in spec.split(",")]
    except ValueError:
        raise SettingsError(flag, f"{spec!r} is not a comma-separated list of integers") from None
