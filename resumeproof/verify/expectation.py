"""What the plan requires of a trajectory, held against the continuous run."""

from dataclasses import dataclass
from enum import Enum


class Expect(Enum):
    PREFIX = "prefix"  # its history is the continuous run's first `steps` records
    CONCORDANT = "concordant"  # matches the continuous run
    DIVERGENT = "divergent"  # must not match it: the negative control and every fault


@dataclass(frozen=True)
class Expectation:
    kind: Expect
    check: str  # what verification.json calls the check
    steps: int = 0  # for PREFIX: how many records
    part: str | None = None  # for a fault: the part it omits
    generations: bool = False  # it writes a generation every step: each must be valid, the newest the last
    resumed_at: int = 0  # the update its (last) process resumed from: the first resumed update is this + 1

    @property
    def is_fault(self) -> bool:
        return self.part is not None
