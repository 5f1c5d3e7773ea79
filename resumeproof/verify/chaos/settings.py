"""What `resumeproof chaos` is asked to do: parsed from the command line once and checked by the object itself."""

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from resumeproof.verify.settings import SettingsError, at_least

PROCESS, RANK = "process", "rank"  # what a chaos kill targets: the trainer, or one worker of a torchrun group
MIN_PACE = 0.001  # seconds per update: a run that sleeps less leaves no instant to aim at
# A cadence of 0 ("never": a generation only when a signal asks for one) leaves a SIGKILL nothing newer to
# resume from than the last SIGTERM or SIGUSR1, and the instants aimed "inside a write" only the final one.
NEEDS_CADENCE = "chaos needs a cadence >= 1: it aims signals inside the generations' writes and resumes from them"


@dataclass(frozen=True, kw_only=True)
class ChaosSettings:
    """What `resumeproof chaos` is asked to do."""

    output: Path  # must not exist
    train: list[str]  # the training command line the flags are appended to
    kills: int  # signals to deliver
    steps: int  # the final global step
    checkpoint_every: int  # a generation every K steps; at least 1 (NEEDS_CADENCE)
    seed: int  # of the instants and signals: the same seed, the same schedule
    pace: float  # seconds the trainer sleeps after each update, so instants land inside training
    timeout: float  # per trainer process (per group start, with kill="rank")
    kill: str = PROCESS  # PROCESS: signal the trainer; RANK: SIGKILL one rank, torchrun restarts the group

    def __post_init__(self) -> None:
        if not self.train:
            raise SettingsError("--train-cmd", "is empty")
        at_least("--kills", self.kills, 1)
        at_least("--steps", self.steps, 2)
        if not (math.isfinite(self.pace) and self.pace >= MIN_PACE):
            raise SettingsError("--pace", f"{self.pace} must be a finite number of seconds >= {MIN_PACE}")
        at_least("--timeout", self.timeout, 1)
        if self.checkpoint_every < 1:
            raise SettingsError("--checkpoint-every", f"{self.checkpoint_every}: {NEEDS_CADENCE}")
        if self.kill not in (PROCESS, RANK):
            raise SettingsError("--kill", f"{self.kill!r}: {PROCESS} or {RANK}")

    def record(self) -> dict[str, Any]:
        """What verification.json records of the settings."""
        return {
            "kills": self.kills,
            "steps": self.steps,
            "checkpoint_every": self.checkpoint_every,
            "seed": self.seed,
            "pace": self.pace,
            "kill": self.kill,
        }
