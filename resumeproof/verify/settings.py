"""What one verification is asked to do, parsed from the command line once and checked."""

import shlex
from dataclasses import dataclass
from pathlib import Path

from resumeproof.common.allowances import NONE_ALLOWED, Allowances
from resumeproof.common.errors import ResumeproofError
from resumeproof.common.protocol import MODEL, PART_NAME
from resumeproof.verify.points import EPOCHS

DEFAULT_POINT = 5  # the default interruption point: mid-epoch for the bundled trainer
ALL = "all"  # --faults all: the parts the trainer declares (meta.parts), else the standard set
FLAT = "flat"  # --faults flat: resume from the classic flat file of weights and Adam moments alone


class SettingsError(ResumeproofError):
    """An option value that cannot be verified; `flag` names the option."""

    def __init__(self, flag: str, message: str) -> None:
        super().__init__(f"{flag}: {message}")
        self.flag, self.message = flag, message


@dataclass(frozen=True, kw_only=True)
class Settings:
    output: Path  # run directory of this verification; must not exist
    steps: int  # N: updates of the continuous run
    points: tuple[int, ...]  # interruption points k, the primary one first (empty until inferred)
    atol: float  # absolute tolerance, no relative one
    train_cmd: str  # command line the protocol flags are appended to
    jobs: int  # processes at once
    timeout: float  # seconds per trajectory before it is killed
    torch_load: bool = False  # also load every checkpoint with torch.load(weights_only=True)
    faults: tuple[str, ...] = ()  # parts to omit, one resume each
    segments: tuple[tuple[int, ...], ...] = ()  # chains: updates per process, summing to N
    infer_points: bool = False  # --interrupt-at epochs: the points come from the continuous history
    cadence: int = 0  # also run continuous with --checkpoint-every CADENCE (0: no)
    plot: bool = False  # write verification.png
    allow: Allowances = NONE_ALLOWED  # checkpoint files accepted although they can run code or cannot be read
    resume_cmd: str | None = None  # --resume-cmd: what every resuming process runs instead (another world size)
    repeat: bool = False  # --repeat: run the continuous run twice even when every comparison passes

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
        return shlex.split(self.resume_cmd or self.train_cmd)


def parse_train_cmd(train_cmd: str, flag: str = "--train-cmd") -> str:
    try:
        if not shlex.split(train_cmd):
            raise SettingsError(flag, "is empty")
    except ValueError as err:
        raise SettingsError(flag, f"{train_cmd!r}: {err}") from None
    return train_cmd


def parse_points(spec: str, steps: int) -> tuple[int, ...]:
    """'5', '1,4,6,9', 'all' (every k from 1 to N-1) or 'epochs' (inferred later: empty here)."""
    if spec == EPOCHS:
        return ()
    points = list(range(1, steps)) if spec == "all" else _ints(spec, "--interrupt-at")
    if not points or any(not 1 <= k < steps for k in points) or len(set(points)) != len(points):
        raise SettingsError("--interrupt-at", f"{spec!r}: distinct points k with 1 <= k < --steps {steps}")
    return primary_first(points)


def primary_first(points: list[int] | tuple[int, ...]) -> tuple[int, ...]:
    """The primary point (the default 5 when it is among them, else the first given) goes first."""
    primary = DEFAULT_POINT if DEFAULT_POINT in points else points[0]
    return (primary, *(k for k in points if k != primary))


def parse_faults(spec: str | None) -> tuple[str, ...]:
    """'all' (the parts the trainer declares, known once it ran), a list of parts its --omit accepts, and/or 'flat'."""
    if not spec:
        return ()
    parts = [item.strip() for item in spec.split(",")]
    malformed = [part for part in parts if not PART_NAME.fullmatch(part)]
    if malformed:
        shown = ", ".join(repr(part) for part in malformed)
        raise SettingsError("--faults", f"{shown}: a part is a lower-case name like {MODEL!r}; or {ALL}, {FLAT}")
    return tuple(dict.fromkeys(parts))


def parse_segments(specs: tuple[str, ...], steps: int) -> tuple[tuple[int, ...], ...]:
    chains = tuple(tuple(_ints(spec, "--segments")) for spec in specs)
    for spec, chain in zip(specs, chains, strict=True):
        if len(chain) < 2 or min(chain) < 1 or sum(chain) != steps:
            raise SettingsError("--segments", f"{spec!r}: at least two counts >= 1 that sum to --steps {steps}")
    return chains


def _ints(spec: str, flag: str) -> list[int]:
    try:
        return [int(item) for item in spec.split(",")]
    except ValueError:
        raise SettingsError(flag, f"{spec!r} is not a comma-separated list of integers") from None
