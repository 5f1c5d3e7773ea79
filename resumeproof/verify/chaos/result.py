"""The result of `resumeproof chaos`, and the verification.json it writes."""

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from resumeproof.common import codec, protocol
from resumeproof.verify.vocabulary.findings import Check


@dataclass(frozen=True, kw_only=True)
class Kill:
    """One signal delivered: which, while the trainer was doing what, after which logged update; under torchrun, to
    which rank."""

    signal: str
    phase: str
    step: int
    rank: int | None = field(default=None, metadata=codec.field(omit=True))


@dataclass(frozen=True, kw_only=True)
class ChaosResult:
    """A chaos run: its checks (the same shape as a verification's) and what the signals did."""

    checks: tuple[Check, ...]
    first_mismatch: str | None
    kills: tuple[Kill, ...]
    trainer_starts: int
    replayed_steps: int
    broken_log_lines: int
    kills_without_valid_generation: tuple[int, ...]
    settings: dict[str, Any]

    @property
    def all_checks_passed(self) -> bool:
        return all(c.passed for c in self.checks)

    @property
    def kills_by_signal(self) -> dict[str, int]:
        return dict(Counter(k.signal for k in self.kills))

    @property
    def kills_by_phase(self) -> dict[str, int]:
        return dict(Counter(k.phase for k in self.kills))

    def to_json(self) -> dict[str, Any]:
        """chaos's verification.json: the fields, among what it says for a reader."""
        return codec.encode(
            {
                "all_checks_passed": self.all_checks_passed,
                "checks": self.checks,
                "first_mismatch": self.first_mismatch,
                "kills": self.kills,
                "kills_by_signal": self.kills_by_signal,
                "kills_by_phase": self.kills_by_phase,
                "trainer_starts": self.trainer_starts,
                "replayed_steps": self.replayed_steps,
                "broken_log_lines": self.broken_log_lines,
                "kills_without_valid_generation": self.kills_without_valid_generation,
                "settings": self.settings,
            }
        )

    def write(self, path: Path) -> None:
        protocol.write_json(path, self.to_json())
