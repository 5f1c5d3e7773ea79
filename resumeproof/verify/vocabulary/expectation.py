"""What the plan requires of a trajectory, held against the continuous run, and the identity of the check it makes."""

from dataclasses import dataclass
from enum import Enum

from resumeproof.common.protocol import CheckId, CheckKind


class Expect(Enum):
    PREFIX = "prefix"  # its history is the continuous run's first `steps` records
    CONCORDANT = "concordant"  # matches the continuous run
    DIVERGENT = "divergent"  # must not match it: the negative control and every fault
    REPEAT = "repeat"  # the continuous run again: a difference means the trainer is not deterministic
    PROBE = "probe"  # evidence for a diagnosis (a resume without one part, a run of 0 updates): no check of its own


@dataclass(frozen=True, kw_only=True)
class Expectation:
    kind: Expect
    id: CheckId  # what reports find the check by
    name: str  # what verification.json calls the check, for a person
    steps: int = 0  # for PREFIX: how many records
    part: str | None = None  # for a fault or a probe: the part it omits (the trainer must echo it)
    generations: bool = False  # it writes a generation every step: each must be valid, the newest the last
    resumed_at: int = 0  # the update its (last) process resumed from: the first resumed update is this + 1

    @property
    def is_fault(self) -> bool:
        return self.id.kind is CheckKind.FAULT

    @property
    def makes_check(self) -> bool:
        return self.kind not in (Expect.REPEAT, Expect.PROBE)
