"""What a verification found, as typed objects built once: verification.json is written from them, and the
terminal report, JUnit, Markdown, the pytest plugin and chaos all render the same objects.

Every check carries its identity (`CheckId`: kind, trajectory, part) and its own diagnosis, so that no
reader ever finds a check by its wording. `Verification.from_json` also reads documents written before
checks carried their identity (they read as `CheckKind.LEGACY`, their diagnoses stay in the comparison).
"""

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from resumeproof.common.protocol import RESUMED, CheckId, CheckKind

CONCORDANT, DIVERGENT = "concordant", "divergent"
UNKNOWN = "unknown"  # a diagnosis that names no part: here is the evidence instead


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

    def sentence(self) -> str:
        """The one way a diagnosis is said, wherever it is shown."""
        where = f" from update {self.step}" if self.step else ""
        head = f"likely lost {self.named}" if self.lost else "cause unknown"
        return f"{head}{where}: {self.explanation}"

    def to_json(self) -> dict[str, Any]:
        return {
            "lost": self.named, "parts": list(self.lost), "rule": self.rule, "step": self.step,
            "evidence": self.evidence, "explanation": self.explanation,
        }  # fmt: skip

    @classmethod
    def from_json(cls, d: dict[str, Any] | None) -> "Diagnosis | None":
        if d is None:
            return None
        parts = d.get("parts")
        if parts is None:  # before parts were listed: the names joined in `lost`
            parts = [] if d["lost"] in (UNKNOWN, "random state") else [p.strip() for p in d["lost"].split(",")]
        return cls(lost=tuple(parts), rule=d["rule"], step=d.get("step"), evidence=d.get("evidence") or "",
                   explanation=d["explanation"])  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class Check:
    id: CheckId
    name: str  # what a person reads; never what a program matches
    passed: bool
    max_abs_diff: float | None = None
    first_mismatch: str | None = None
    detail: str | None = None
    diagnosis: Diagnosis | None = None  # why it failed (or, for a run that must diverge, how it did)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name, "kind": str(self.id.kind), "trajectory": self.id.trajectory, "part": self.id.part,
            "passed": self.passed, "max_abs_diff": self.max_abs_diff, "first_mismatch": self.first_mismatch,
            "detail": self.detail, "diagnosis": self.diagnosis.to_json() if self.diagnosis else None,
        }  # fmt: skip

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Check":
        kind = CheckKind(d["kind"]) if "kind" in d else CheckKind.LEGACY
        return cls(
            id=CheckId(kind=kind, trajectory=d.get("trajectory"), part=d.get("part")), name=d["name"],
            passed=d["passed"], max_abs_diff=d.get("max_abs_diff"), first_mismatch=d.get("first_mismatch"),
            detail=d.get("detail"), diagnosis=Diagnosis.from_json(d.get("diagnosis")),
        )  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class Resume:
    """How far a trajectory that resumed lands from the continuous run."""

    verdict: str  # CONCORDANT or DIVERGENT
    max_state_deviation: float
    max_deviation: float
    final_mse: float | None
    mse_deviation: float | None
    mismatches: int
    first_mismatch: str | None
    diagnosis: Diagnosis | None
    identical_to_full_resume: bool | None = None  # for a run that must diverge: it changed nothing at all

    def to_json(self) -> dict[str, Any]:
        out = {
            "verdict": self.verdict, "max_state_deviation": self.max_state_deviation,
            "max_deviation": self.max_deviation, "final_mse": self.final_mse, "mse_deviation": self.mse_deviation,
            "mismatches": self.mismatches, "first_mismatch": self.first_mismatch,
            "diagnosis": self.diagnosis.to_json() if self.diagnosis else None,
        }  # fmt: skip
        if self.identical_to_full_resume is not None:
            out["identical_to_full_resume"] = self.identical_to_full_resume
        return out

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Resume":
        return cls(**{**d, "diagnosis": Diagnosis.from_json(d.get("diagnosis"))})


@dataclass(frozen=True, kw_only=True)
class Fault:
    """A resume without one part: it must diverge, and the checks that caught it say where it shows."""

    detected: bool
    cause: str
    caught_by: tuple[str, ...]
    first_mismatch: str | None
    max_deviation: float
    mismatches: int
    diagnosis: Diagnosis | None
    identical_to_full_resume: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "detected": self.detected, "cause": self.cause, "caught_by": list(self.caught_by),
            "first_mismatch": self.first_mismatch, "max_deviation": self.max_deviation, "mismatches": self.mismatches,
            "diagnosis": self.diagnosis.to_json() if self.diagnosis else None,
            "identical_to_full_resume": self.identical_to_full_resume,
        }  # fmt: skip

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Fault":
        return cls(**{**d, "caught_by": tuple(d["caught_by"]), "diagnosis": Diagnosis.from_json(d.get("diagnosis"))})


@dataclass(frozen=True, kw_only=True)
class Coverage:
    """What the history shows of the epochs, and which boundaries a verification did not try."""

    epoch_rows: int | None = None
    epoch_boundaries: tuple[int, ...] | None = None
    untried_boundaries: tuple[int, ...] | None = None
    why_unknown: str | None = None

    def to_json(self) -> dict[str, Any]:
        listed = {
            k: None if v is None else list(v) for k, v in (("b", self.epoch_boundaries), ("u", self.untried_boundaries))
        }
        return {"epoch_rows": self.epoch_rows, "epoch_boundaries": listed["b"], "untried_boundaries": listed["u"],
                "why_unknown": self.why_unknown}  # fmt: skip

    @classmethod
    def from_json(cls, d: dict[str, Any] | None) -> "Coverage | None":
        if not d:
            return None
        tupled = {k: None if d.get(k) is None else tuple(d[k]) for k in ("epoch_boundaries", "untried_boundaries")}
        return cls(epoch_rows=d.get("epoch_rows"), why_unknown=d.get("why_unknown"), **tupled)


@dataclass(frozen=True, kw_only=True)
class TrajectoryRecord:
    """One process as it ran: its command, exit, time, checkpoint and log."""

    argv: tuple[str, ...]
    status: str
    exit_code: int | None
    wall_seconds: float | None
    checkpoint_sha256: str | None
    checkpoint_files: tuple[dict[str, Any], ...]
    log: str
    error: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "argv": list(self.argv), "status": self.status, "exit_code": self.exit_code,
            "wall_seconds": self.wall_seconds, "checkpoint_sha256": self.checkpoint_sha256,
            "checkpoint_files": list(self.checkpoint_files), "log": self.log, "error": self.error,
        }  # fmt: skip

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "TrajectoryRecord":
        return cls(**{**d, "argv": tuple(d["argv"]), "checkpoint_files": tuple(d.get("checkpoint_files", ()))})


@dataclass(frozen=True, kw_only=True)
class Determinism:
    """Whether the continuous run equals a repeat of itself; a run that differs from itself is reported as
    such, never as lost state."""

    repeated: bool  # the repeat ran (it runs when a resume comparison fails, or when asked for)
    deterministic: bool | None  # None: not repeated, and nothing before the resume point differed
    first_step: int | None = None  # the first update where the runs differ
    first_mismatch: str | None = None  # its path
    detail: str | None = None  # how the non-determinism was found

    def to_json(self) -> dict[str, Any]:
        return {"repeated": self.repeated, "deterministic": self.deterministic, "first_step": self.first_step,
                "first_mismatch": self.first_mismatch, "detail": self.detail}  # fmt: skip

    @classmethod
    def from_json(cls, d: dict[str, Any] | None) -> "Determinism":
        return cls(**d) if d else cls(repeated=False, deterministic=None)


@dataclass(kw_only=True)
class Verification:
    """One verification: what was asked, what ran, and every check with its evidence."""

    error: str | None  # why it could not complete (exit 2), else None
    train_cmd: str
    resume_cmd: str | None = None
    protocol: str = ""
    steps: int = 0
    interrupt_at: tuple[int, ...] = ()
    segments: tuple[tuple[int, ...], ...] = ()
    atol: float = 0.0
    allowed: dict[str, list[str]] = field(default_factory=dict)
    environment: dict[str, Any] = field(default_factory=dict)
    trajectories: dict[str, TrajectoryRecord] = field(default_factory=dict)
    checks: list[Check] = field(default_factory=list)
    resumes: dict[str, Resume] = field(default_factory=dict)  # every resume that must be concordant
    negative: Resume | None = None  # the resume without RNG restore
    faults: dict[str, Fault] = field(default_factory=dict)
    parts: tuple[str, ...] = ()  # what the trainer declares its --omit accepts (meta.parts), if it does
    determinism: Determinism = field(default_factory=lambda: Determinism(repeated=False, deterministic=None))
    nonfinite: tuple[str, ...] = ()  # paths in `state` where both runs hold the same infinity
    coverage: Coverage | None = None
    next_lr: float | None = None
    plot: str | None = None
    legacy_positive: bool | None = None  # an older document's own `positive`: its checks carry no kind to tell

    @property
    def all_checks_passed(self) -> bool:
        return self.error is None and bool(self.checks) and all(c.passed for c in self.checks)

    @property
    def deterministic(self) -> bool:
        return self.determinism.deterministic is not False

    @property
    def positive(self) -> bool:
        """Every resume that must match does, and every history that must be a prefix is."""
        if self.legacy_positive is not None:
            return self.legacy_positive
        must_match = (CheckKind.PREFIX, CheckKind.RESUME, CheckKind.CADENCE, CheckKind.CHECKPOINT)
        return self.error is None and all(c.passed for c in self.checks if c.id.kind in must_match)

    @property
    def negative_divergence_detected(self) -> bool:
        return self.negative is not None and self.negative.verdict == DIVERGENT

    @property
    def blind_to(self) -> list[str]:
        return [part for part, fault in self.faults.items() if not fault.detected]

    @property
    def full_resume(self) -> Resume | None:
        return self.resumes.get(RESUMED)

    def failed(self) -> list[Check]:
        return [c for c in self.checks if not c.passed]

    def of_kind(self, *kinds: CheckKind) -> list[Check]:
        return [c for c in self.checks if c.id.kind in kinds]

    def to_json(self) -> dict[str, Any]:
        full, negative = self.full_resume, self.negative
        return {
            "all_checks_passed": self.all_checks_passed, "positive": self.positive,
            "negative_divergence_detected": self.negative_divergence_detected, "deterministic": self.deterministic,
            "error": self.error, "protocol": self.protocol, "train_cmd": self.train_cmd, "resume_cmd": self.resume_cmd,
            "steps": self.steps, "interrupt_at": list(self.interrupt_at), "segments": [list(c) for c in self.segments],
            "tolerance": {"atol": self.atol, "rtol": 0.0}, "allowed": self.allowed, "environment": self.environment,
            "trajectories": {name: t.to_json() for name, t in self.trajectories.items()},
            "checks": [c.to_json() for c in self.checks],
            "comparison": {} if full is None or negative is None else {
                "full_resume": full.to_json(), "no_rng_resume": negative.to_json(),
                "resumes": {name: r.to_json() for name, r in self.resumes.items()},
            },
            "faults": {part: f.to_json() for part, f in self.faults.items()}, "blind_to": self.blind_to,
            "parts": list(self.parts), "determinism": self.determinism.to_json(), "nonfinite": list(self.nonfinite),
            "coverage": self.coverage.to_json() if self.coverage else {}, "next_lr": self.next_lr,
            **({"plot": self.plot} if self.plot else {}),
        }  # fmt: skip

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Verification":
        """A verification.json, this version's or an older one (docs/verification-json.md)."""
        comparison = d.get("comparison") or {}
        checks = [Check.from_json(c) for c in d.get("checks", [])]
        legacy = any(c.id.kind is CheckKind.LEGACY for c in checks)
        return cls(
            error=d.get("error"), train_cmd=d.get("train_cmd", ""), resume_cmd=d.get("resume_cmd"),
            protocol=d.get("protocol", ""), steps=d.get("steps", 0), interrupt_at=tuple(d.get("interrupt_at", ())),
            segments=tuple(tuple(c) for c in d.get("segments", ())), atol=(d.get("tolerance") or {}).get("atol", 0.0),
            allowed=d.get("allowed", {}), environment=d.get("environment", {}),
            trajectories={n: TrajectoryRecord.from_json(t) for n, t in d.get("trajectories", {}).items()},
            checks=checks, legacy_positive=d.get("positive") if legacy else None,
            resumes={n: Resume.from_json(r) for n, r in comparison.get("resumes", {}).items()},
            negative=Resume.from_json(comparison["no_rng_resume"]) if comparison.get("no_rng_resume") else None,
            faults={p: Fault.from_json(f) for p, f in (d.get("faults") or {}).items()},
            parts=tuple(d.get("parts", ())), determinism=Determinism.from_json(d.get("determinism")),
            nonfinite=tuple(d.get("nonfinite", ())), coverage=Coverage.from_json(d.get("coverage")),
            next_lr=d.get("next_lr"), plot=d.get("plot"),
        )  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class ChaosResult:
    """A chaos run: its checks (the same shape as a verification's) and what the signals did."""

    checks: tuple[Check, ...]
    first_mismatch: str | None
    kills: tuple[dict[str, Any], ...]
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
        return dict(Counter(k["signal"] for k in self.kills))

    @property
    def kills_by_phase(self) -> dict[str, int]:
        return dict(Counter(k["phase"] for k in self.kills))

    def to_json(self) -> dict[str, Any]:
        return {
            "all_checks_passed": self.all_checks_passed, "checks": [c.to_json() for c in self.checks],
            "first_mismatch": self.first_mismatch, "kills": list(self.kills), "kills_by_signal": self.kills_by_signal,
            "kills_by_phase": self.kills_by_phase, "trainer_starts": self.trainer_starts,
            "replayed_steps": self.replayed_steps, "broken_log_lines": self.broken_log_lines,
            "kills_without_valid_generation": list(self.kills_without_valid_generation), "settings": self.settings,
        }  # fmt: skip


def diagnosed(checks: Iterable[Check]) -> list[Check]:
    """The checks whose diagnosis a reader must see: every failed one that has one."""
    return [c for c in checks if not c.passed and c.diagnosis is not None]
