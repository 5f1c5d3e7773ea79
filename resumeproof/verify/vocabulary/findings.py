"""What the evaluation finds, as typed objects: every check with its identity and diagnosis, how far each
resume and each fault lands from the continuous run, whether the trainer repeats itself, what was tried.

Every check carries its identity (`CheckId`: kind, trajectory, part) and its own diagnosis, so that no
reader ever finds a check by its wording. Each object reads back from verification.json, this version's or
an older one (docs/verification-json.md): a check written before checks carried their identity reads as
`CheckKind.LEGACY`.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from resumeproof.common.protocol import CheckId, CheckKind
from resumeproof.verify.vocabulary.band import Band

CONCORDANT, DIVERGENT = "concordant", "divergent"
WITHIN_SPREAD = "within-spread"  # a resume of a trainer that is not deterministic, inside its measured spread
UNKNOWN = "unknown"  # a diagnosis that names no part: here is the evidence instead
DIRECT = (
    "first-update"  # the rule of a diagnosis read off the first resumed update itself (judge/records/first_update.py)
)
SECOND = "second-update"  # read off the second resumed update, the first one the same in every input and output
AT_RESTORE = "restore"  # the rule of a diagnosis read off a resume of 0 updates against what was saved (tiers)
COUNTED = "update-count"  # every update a resume made is the continuous run's, but not as many as were left
OUTSIDE_SPREAD = "outside-spread"  # a trajectory outside the measured spread, its restore exact: no part named
# A run that blocked nothing (`verify --observe`): the script never called what its negative control or fault makes a
# no-op, so it could show nothing either way; it neither passes as caught nor fails (docs/checks.md).
NOT_APPLICABLE = "not-applicable"


class FaultStatus(StrEnum):
    """What became of one fault: caught (it diverged), not caught (exit 1), or not applicable (nothing to block)."""

    CAUGHT = "caught"
    NOT_CAUGHT = "not-caught"
    NOT_APPLICABLE = NOT_APPLICABLE


@dataclass(frozen=True, kw_only=True)
class Diagnosis:
    """Why a run differs from the continuous one: the parts the evidence points to, or none (unknown)."""

    lost: tuple[str, ...]  # part names; () when the evidence points to no part
    rule: str  # which rule decided it (docs/checks.md)
    step: int | None  # the first update where the runs differ
    evidence: str  # the differences that decided it, by path
    explanation: str  # one sentence a user can act on

    @property
    def named(self) -> str:
        return ", ".join(self.lost) or UNKNOWN

    @property
    def head(self) -> str:
        """What it blames, as every report says it (the verdict line too): "lost X" on direct evidence of the first
        resumed update or of the restore, "likely lost X" where the runs' files point to it, else "cause unknown"."""
        if not self.lost:
            return "cause unknown"
        return (
            f"lost {self.named}" if self.rule in (DIRECT, SECOND, AT_RESTORE, COUNTED) else f"likely lost {self.named}"
        )

    def sentence(self) -> str:
        """The one way a diagnosis is said, wherever it is shown: direct evidence of the first resumed update
        ("lost ... at update 6 (the first resumed one)"), or what the runs' files point to ("likely lost ...")."""
        if self.rule == DIRECT:
            return f"{self.head} at update {self.step} (the first resumed one): {self.explanation}"
        if self.rule == SECOND:
            return f"{self.head} at update {self.step} (the second resumed one): {self.explanation}"
        if self.rule == AT_RESTORE:
            return f"{self.head} at the restore, before update {self.step}: {self.explanation}"
        where = f" from update {self.step}" if self.step else ""
        return f"{self.head}{where}: {self.explanation}"

    def to_json(self) -> dict[str, Any]:
        return {
            "lost": self.named,
            "parts": list(self.lost),
            "rule": self.rule,
            "step": self.step,
            "evidence": self.evidence,
            "explanation": self.explanation,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any] | None) -> "Diagnosis | None":
        if d is None:
            return None
        parts = d.get("parts")
        if parts is None:  # before parts were listed: the names joined in `lost`
            parts = [] if d["lost"] in (UNKNOWN, "random state") else [p.strip() for p in d["lost"].split(",")]
        return cls(
            lost=tuple(parts),
            rule=d["rule"],
            step=d.get("step"),
            evidence=d.get("evidence") or "",
            explanation=d["explanation"],
        )


@dataclass(frozen=True, kw_only=True)
class Check:
    id: CheckId
    name: str  # what a person reads; never what a program matches
    passed: bool
    max_abs_diff: float | None = None
    first_mismatch: str | None = None
    detail: str | None = None
    diagnosis: Diagnosis | None = None  # why it failed (or, for a run that must diverge, how it did)
    resumed_at: int | None = None  # the update its trajectory's process resumed from, for a check of a resume
    first_update: int | None = None  # the first update where it differs from what it is held against, where known
    not_applicable: str | None = None  # why it could claim nothing ("the script never called X"); it then passes

    def __post_init__(self) -> None:
        if self.not_applicable is not None and not self.passed:
            raise ValueError(f"{self.name}: a check that is not applicable cannot fail")

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": str(self.id.kind),
            "trajectory": self.id.trajectory,
            "part": self.id.part,
            "passed": self.passed,
            "max_abs_diff": self.max_abs_diff,
            "first_mismatch": self.first_mismatch,
            "detail": self.detail,
            "diagnosis": self.diagnosis.to_json() if self.diagnosis else None,
            "resumed_at": self.resumed_at,
            "first_update": self.first_update,
            "not_applicable": self.not_applicable,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Check":
        kind = CheckKind(d["kind"]) if "kind" in d else CheckKind.LEGACY
        return cls(
            id=CheckId(kind=kind, trajectory=d.get("trajectory"), part=d.get("part")),
            name=d["name"],
            passed=d["passed"],
            max_abs_diff=d.get("max_abs_diff"),
            first_mismatch=d.get("first_mismatch"),
            detail=d.get("detail"),
            diagnosis=Diagnosis.from_json(d.get("diagnosis")),
            resumed_at=d.get("resumed_at"),
            first_update=d.get("first_update"),
            not_applicable=d.get("not_applicable"),
        )


def diagnosed(checks: Iterable[Check]) -> list[Check]:
    """The checks whose diagnosis a reader must see: every failed one that has one."""
    return [c for c in checks if not c.passed and c.diagnosis is not None]


@dataclass(frozen=True, kw_only=True)
class Resume:
    """How far a trajectory that resumed lands from the continuous run."""

    verdict: str  # CONCORDANT, DIVERGENT, WITHIN_SPREAD, or NOT_APPLICABLE (a negative control that blocked nothing)
    max_state_deviation: float | None  # None: not known (verify --observe holds digests of the state, not values)
    max_deviation: float
    final_mse: float | None
    mse_deviation: float | None
    mismatches: int
    first_mismatch: str | None
    diagnosis: Diagnosis | None
    identical_to_full_resume: bool | None = None  # for a run that must diverge: it changed nothing at all

    def to_json(self) -> dict[str, Any]:
        out = {
            "verdict": self.verdict,
            "max_state_deviation": self.max_state_deviation,
            "max_deviation": self.max_deviation,
            "final_mse": self.final_mse,
            "mse_deviation": self.mse_deviation,
            "mismatches": self.mismatches,
            "first_mismatch": self.first_mismatch,
            "diagnosis": self.diagnosis.to_json() if self.diagnosis else None,
        }
        if self.identical_to_full_resume is not None:
            out["identical_to_full_resume"] = self.identical_to_full_resume
        return out

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Resume":
        return cls(**{**d, "diagnosis": Diagnosis.from_json(d.get("diagnosis"))})


@dataclass(frozen=True, kw_only=True)
class Fault:
    """A resume without one part: it must diverge, and the checks that caught it say where it shows; or, where the
    script never called the restore it blocks, it is not applicable (`not_applicable` says which call)."""

    detected: bool
    cause: str
    caught_by: tuple[str, ...]
    first_mismatch: str | None
    max_deviation: float
    mismatches: int
    diagnosis: Diagnosis | None
    identical_to_full_resume: bool
    not_applicable: str | None = None  # "the script never called X": it blocked nothing, so it could show nothing

    def __post_init__(self) -> None:
        if self.not_applicable is not None and (self.detected or self.diagnosis is not None):
            raise ValueError(f"{self.cause}: a fault that is not applicable is neither caught nor diagnosed")

    @property
    def status(self) -> FaultStatus:
        if self.not_applicable is not None:
            return FaultStatus.NOT_APPLICABLE
        return FaultStatus.CAUGHT if self.detected else FaultStatus.NOT_CAUGHT

    def to_json(self) -> dict[str, Any]:
        return {
            "status": str(self.status),  # written for a reader: read back, it is computed again
            "not_applicable": self.not_applicable,
            "detected": self.detected,
            "cause": self.cause,
            "caught_by": list(self.caught_by),
            "first_mismatch": self.first_mismatch,
            "max_deviation": self.max_deviation,
            "mismatches": self.mismatches,
            "diagnosis": self.diagnosis.to_json() if self.diagnosis else None,
            "identical_to_full_resume": self.identical_to_full_resume,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Fault":
        given = {key: value for key, value in d.items() if key != "status"}
        return cls(
            **{**given, "caught_by": tuple(d["caught_by"]), "diagnosis": Diagnosis.from_json(d.get("diagnosis"))}
        )


@dataclass(frozen=True, kw_only=True)
class Coverage:
    """What the history shows of the epochs, and which boundaries a verification did not try."""

    epoch_rows: int | None = None
    epoch_boundaries: tuple[int, ...] | None = None
    untried_boundaries: tuple[int, ...] | None = None
    why_unknown: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "epoch_rows": self.epoch_rows,
            "epoch_boundaries": _listed(self.epoch_boundaries),
            "untried_boundaries": _listed(self.untried_boundaries),
            "why_unknown": self.why_unknown,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any] | None) -> "Coverage | None":
        if not d:
            return None
        tupled = {k: None if d.get(k) is None else tuple(d[k]) for k in ("epoch_boundaries", "untried_boundaries")}
        return cls(epoch_rows=d.get("epoch_rows"), why_unknown=d.get("why_unknown"), **tupled)


@dataclass(frozen=True, kw_only=True)
class Determinism:
    """Whether the continuous run equals a repeat of itself; a run that differs from itself is reported as
    such, never as lost state."""

    repeated: bool  # the repeat ran (it runs when a resume comparison fails, or when asked for)
    deterministic: bool | None  # None: not repeated, and nothing before the resume point differed
    first_step: int | None = None  # the first update where the runs differ
    first_mismatch: str | None = None  # its path
    detail: str | None = None  # how the non-determinism was found
    # Where it differs from itself and is judged by the two tiers: the spread its repeats measured
    # (verify/judge/spread.py)
    spread: Band | None = None

    @property
    def within_spread(self) -> bool:
        """Not deterministic, and judged by its restore and its measured spread rather than failed for it."""
        return self.deterministic is False and self.spread is not None

    def to_json(self) -> dict[str, Any]:
        return {
            "repeated": self.repeated,
            "deterministic": self.deterministic,
            "first_step": self.first_step,
            "first_mismatch": self.first_mismatch,
            "detail": self.detail,
            "spread": self.spread.to_json() if self.spread else None,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any] | None) -> "Determinism":
        if not d:
            return cls(repeated=False, deterministic=None)
        return cls(**{**d, "spread": Band.from_json(d.get("spread"))})


def _listed(points: tuple[int, ...] | None) -> list[int] | None:
    return None if points is None else list(points)


@dataclass(frozen=True, kw_only=True)
class Evaluated:
    """What the judge hands the report, whichever evidence it read (summaries, the observer's records): every check,
    each resume that must be concordant, the negative control, the faults, and determinism first."""

    checks: list[Check]
    resumes: dict[str, Resume]
    negative: Resume | None  # None where no comparison was made (a script that differs from itself, bit for bit)
    faults: dict[str, Fault]
    determinism: Determinism
    coverage: Coverage | None = None  # the untried points (a protocol trainer's history tells them)
    nonfinite: tuple[str, ...] = ()  # paths in `state` where both runs hold the same infinity
    next_lr: Any = None
