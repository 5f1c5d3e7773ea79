"""What the evaluation finds, as typed objects: every check with its identity and diagnosis, how far each
resume and each fault lands from the continuous run, whether the trainer repeats itself, what was tried.

Every check carries its identity (`CheckId`: kind, trajectory, part) and its own diagnosis, so that no
reader ever finds a check by its wording. Each object is written to verification.json and read back from it by
common/codec.py, field by field, from this version's document or an older one (docs/verification-json.md): a check
written before checks carried their identity reads as `CheckKind.LEGACY` (`_check_without_kind`), a diagnosis
written before its parts were listed reads them from `lost` (`_diagnosis_without_parts`).
"""

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from resumeproof.common import codec
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
CHANGED = (
    "changed"  # a resume by other code (verify/judge/records/versions.py): restored exactly, its trajectory changed
)
CHANGED_CODE = "changed-code"  # the rule of a diagnosis that names no lost part: the resume's code computes otherwise
OUTSIDE_SPREAD = "outside-spread"  # a trajectory outside the measured spread, its restore exact: no part named
# A run that blocked nothing (`verify --observe`): the script never called what its negative control or fault makes a
# no-op, so it could show nothing either way; it neither passes as caught nor fails (docs/checks.md).
NOT_APPLICABLE = "not-applicable"


class FaultStatus(StrEnum):
    """What became of one fault: caught (it diverged), not caught (exit 1), or not applicable (nothing to block)."""

    CAUGHT = "caught"
    NOT_CAUGHT = "not-caught"
    NOT_APPLICABLE = NOT_APPLICABLE


def _diagnosis_without_parts(d: dict[str, Any]) -> dict[str, Any]:
    """A diagnosis written before its parts were listed: the names joined in `lost`, its evidence perhaps missing."""
    if "parts" in d or not isinstance(d.get("lost"), str):
        return d
    parts = [] if d["lost"] in (UNKNOWN, "random state") else [p.strip() for p in d["lost"].split(",")]
    return {"step": None, **d, "evidence": d.get("evidence") or "", "parts": parts}


@dataclass(frozen=True, kw_only=True)
class Diagnosis:
    """Why a run differs from the continuous one: the parts the evidence points to, or none (unknown)."""

    # part names; () when the evidence points to no part. Written as `parts`, beside `lost`: the names a reader reads
    lost: tuple[str, ...] = field(metadata=codec.field(key="parts"))
    rule: str  # which rule decided it (docs/checks.md)
    step: int | None  # the first update where the runs differ
    evidence: str  # the differences that decided it, by path
    explanation: str  # one sentence a user can act on

    @property
    def named(self) -> str:
        """The parts it blames, joined; "none" where the resume's code computes otherwise, "unknown" where nothing
        points to a part."""
        return ", ".join(self.lost) or ("none" if self.rule == CHANGED_CODE else UNKNOWN)

    @property
    def head(self) -> str:
        """What it blames, as every report says it (the verdict line too): "lost X" on direct evidence of the first
        resumed update or of the restore, "likely lost X" where the runs' files point to it, else "cause unknown"."""
        if self.rule == CHANGED_CODE:
            return "changed by the resume's code"
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
        if self.rule == CHANGED_CODE:
            return f"{self.head} from update {self.step}: {self.explanation}"
        where = f" from update {self.step}" if self.step else ""
        return f"{self.head}{where}: {self.explanation}"

    json_older = staticmethod(_diagnosis_without_parts)

    def json_extra(self, written: dict[str, Any]) -> dict[str, Any]:
        """`lost` first, the parts as a reader reads them (joined, or "unknown"); read back, `parts` is read."""
        return {"lost": self.named, **written}


def _check_without_kind(d: dict[str, Any]) -> dict[str, Any]:
    """A check written before checks carried their identity: `CheckKind.LEGACY`, its comparison kept."""
    return d if "kind" in d else {**d, "kind": str(CheckKind.LEGACY)}


@dataclass(frozen=True, kw_only=True)
class Check:
    name: str  # what a person reads; never what a program matches
    id: CheckId = field(metadata=codec.field(inline=True))  # written as its kind, trajectory and part
    passed: bool
    max_abs_diff: float | None = None
    first_mismatch: str | None = None
    detail: str | None = None
    diagnosis: Diagnosis | None = None  # why it failed (or, for a run that must diverge, how it did)
    resumed_at: int | None = None  # the update its trajectory's process resumed from, for a check of a resume
    first_update: int | None = None  # the first update where it differs from what it is held against, where known
    not_applicable: str | None = None  # why it could claim nothing ("the script never called X"); it then passes

    json_older = staticmethod(_check_without_kind)

    def __post_init__(self) -> None:
        if self.not_applicable is not None and not self.passed:
            raise ValueError(f"{self.name}: a check that is not applicable cannot fail")


def diagnosed(checks: Iterable[Check]) -> list[Check]:
    """The checks whose diagnosis a reader must see: every failed one that has one."""
    return [c for c in checks if not c.passed and c.diagnosis is not None]


@dataclass(frozen=True, kw_only=True)
class Resume:
    """How far a trajectory that resumed lands from the continuous run."""

    # CONCORDANT, DIVERGENT, WITHIN_SPREAD, CHANGED, or NOT_APPLICABLE (a negative control that blocked nothing)
    verdict: str
    max_state_deviation: float | None  # None: not known (verify --observe holds digests of the state, not values)
    max_deviation: float
    final_mse: float | None
    mse_deviation: float | None
    mismatches: int
    first_mismatch: str | None
    diagnosis: Diagnosis | None
    # for a run that must diverge: it changed nothing at all (written only for such a run)
    identical_to_full_resume: bool | None = field(default=None, metadata=codec.field(omit=True))


@dataclass(frozen=True, kw_only=True)
class Fault:
    """A resume without one part: it must diverge, and the checks that caught it say where it shows; or, where the
    script never called the restore it blocks, it is not applicable (`not_applicable` says which call)."""

    not_applicable: str | None = None  # "the script never called X": it blocked nothing, so it could show nothing
    detected: bool
    cause: str
    caught_by: tuple[str, ...]
    first_mismatch: str | None
    max_deviation: float
    mismatches: int
    diagnosis: Diagnosis | None
    identical_to_full_resume: bool

    def __post_init__(self) -> None:
        if self.not_applicable is not None and (self.detected or self.diagnosis is not None):
            raise ValueError(f"{self.cause}: a fault that is not applicable is neither caught nor diagnosed")

    @property
    def status(self) -> FaultStatus:
        if self.not_applicable is not None:
            return FaultStatus.NOT_APPLICABLE
        return FaultStatus.CAUGHT if self.detected else FaultStatus.NOT_CAUGHT

    def json_extra(self, written: dict[str, Any]) -> dict[str, Any]:
        """`status` first, written for a reader: read back, it is computed again."""
        return {"status": str(self.status), **written}


@dataclass(frozen=True, kw_only=True)
class Coverage:
    """What the history shows of the epochs, and which boundaries a verification did not try."""

    epoch_rows: int | None = None
    epoch_boundaries: tuple[int, ...] | None = None
    untried_boundaries: tuple[int, ...] | None = None
    why_unknown: str | None = None


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
    # (verify/judge/spread.py), written in its own shape (band.py)
    spread: Band | None = field(default=None, metadata=codec.field(encode=Band.to_json, decode=Band.from_json))

    @property
    def within_spread(self) -> bool:
        """Not deterministic, and judged by its restore and its measured spread rather than failed for it."""
        return self.deterministic is False and self.spread is not None


@dataclass(frozen=True, kw_only=True)
class Side:
    """What ran one side of a verification across versions, as the observer recorded it (common/observation.py's
    Environment): the interpreter, Python, torch, the script, and one sha256 over its code's files."""

    executable: str
    python: str
    torch: str
    script: str
    code_sha256: str  # over the path (from the script's folder) and sha256 of each file of the code both sides loaded
    files: int  # how many files that is


@dataclass(frozen=True, kw_only=True)
class Across:
    """A verification whose resumes ran in another environment than its continuous and interrupted runs (another
    checkout of the trainer, another interpreter or torch: --resume-cmd): both, and how they differ."""

    run: Side  # the continuous and interrupted runs'
    resume: Side  # the resumes'
    differs: tuple[str, ...]  # "torch 2.13.0+cpu vs 2.12.0+cpu", "code: train.py", ...

    @property
    def said(self) -> str:
        return "; ".join(self.differs)

    def sides(self) -> str:
        """Both environments in one line, for a reader."""
        return f"the runs: {_side(self.run)}; the resumes: {_side(self.resume)}"


def _side(side: Side) -> str:
    code = f", the code both loaded {side.code_sha256[:12]} ({side.files} files)" if side.files else ""
    return f"{side.executable} (Python {side.python}, torch {side.torch}), {side.script}{code}"


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
    across: Across | None = None  # the resumes ran in another environment (verify/judge/records/versions.py)
