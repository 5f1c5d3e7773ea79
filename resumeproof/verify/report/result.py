"""A verification as one typed object built once: verification.json is written from it and read back into it,
and the terminal report, JUnit, Markdown and the pytest plugin render it.

Every record is written and read by common/codec.py, field by field; the document's own layout (what it says for a
reader, the tolerance, the comparison) is `Verification.to_json` and `_as_fields`. `Verification.from_json` also
reads documents written before checks carried their identity (they read as `CheckKind.LEGACY`, their diagnoses stay
in the comparison; docs/verification-json.md).
"""

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from resumeproof.common import codec, protocol
from resumeproof.common.checkpoint_files import FileInfo
from resumeproof.common.protocol import RESUMED, CheckKind
from resumeproof.verify.report.verdict import Verdict, failure, verdict
from resumeproof.verify.run.launch import Placement
from resumeproof.verify.run.launch.preempt import Preempted
from resumeproof.verify.run.trajectories import Trajectory
from resumeproof.verify.settings import Settings
from resumeproof.verify.vocabulary.findings import (
    DIVERGENT,
    Across,
    Check,
    Coverage,
    Determinism,
    Evaluated,
    Fault,
    FaultStatus,
    Resume,
)


@dataclass(frozen=True)
class CheckedCheckpoint:
    """What `resumeproof check` says of a checkpoint the verifier resumed from without admitting it (a script's
    own, under `verify --observe`): reported beside the verdict, never part of it."""

    path: str
    verdict: str  # verify/run/vet.py's Verdict: accepted, refused, unreadable
    line: str  # check's own line


OMITTED = codec.field(omit=True)  # written only where there is something to say


@dataclass(frozen=True, kw_only=True)
class StartedFrom:
    """A script's resume's input (report/assembled.py): the checkpoint its command named, the folder it is a copy of
    (--resume-from-run), and the interrupted run's checkpoint's sha256 as fingerprinted before any resume started."""

    checkpoint: str
    copy_of: str | None
    sha256: str | None


def _record_without_files(d: dict[str, Any]) -> dict[str, Any]:
    """A trajectory recorded before its checkpoint's files were listed."""
    return {"checkpoint_files": [], **d}


@dataclass(frozen=True, kw_only=True)
class TrajectoryRecord:
    """One process as it ran: its command, exit, time, checkpoint and log."""

    argv: tuple[str, ...]
    status: str
    exit_code: int | None
    wall_seconds: float | None
    checkpoint_sha256: str | None
    checkpoint_files: tuple[FileInfo, ...]
    log: str
    error: str | None
    check: CheckedCheckpoint | None = field(default=None, metadata=OMITTED)
    started_from: StartedFrom | None = field(default=None, metadata=OMITTED)  # a script's resume's input
    ran_on: Placement | None = field(default=None, metadata=OMITTED)  # where its command ran; None: it never ran
    # --preempt: how Slurm preempted its job, and each start (launch/preempt.py)
    preemption: Preempted | None = field(default=None, metadata=OMITTED)
    # what makes another run of it the same run (verify/run/reuse.py)
    run_key: dict[str, str] | None = field(default=None, metadata=OMITTED)
    reused_from: str | None = field(default=None, metadata=OMITTED)  # --reuse-runs: the verification it was copied from
    not_reused: str | None = field(default=None, metadata=OMITTED)  # --reuse-runs: why it ran again
    # the update after which the observer ended it, where the plan asked
    stopped_after: int | None = field(default=None, metadata=OMITTED)

    json_older = staticmethod(_record_without_files)


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
    # The updates the continuous run made where more than --steps (`verify --observe`: a loop that runs iterations 0
    # to max_iters inclusive); the observer recorded the first --steps, and only those are compared.
    continuous_made: int | None = None
    across: Across | None = field(default=None, metadata=OMITTED)  # the resumes ran in another environment

    @classmethod
    def asked(
        cls,
        s: Settings,
        protocol: str,
        environment: dict[str, Any],
        trajectories: dict[str, TrajectoryRecord],
        error: str | None = None,
    ) -> "Verification":
        """The header every verification opens with: what was asked, read from its settings once; what judged it
        (the protocol, or the observer's format), where and what ran. The judgement fills in the rest."""
        return cls(
            error=error,
            train_cmd=s.train_cmd,
            resume_cmd=s.resume_cmd,
            protocol=protocol,
            steps=s.steps,
            interrupt_at=s.points,
            segments=s.subject.segments,
            atol=s.atol,
            allowed={"unsafe_pickle": list(s.subject.allow.unsafe_pickle), "opaque": list(s.subject.allow.opaque)},
            environment=environment,
            trajectories=trajectories,
        )

    def judged(self, evaluated: Evaluated, checked: list[Check] | None = None) -> "Verification":
        """This header with the judge's findings, after the checks that came before it (the checkpoints')."""
        return replace(
            self,
            checks=[*(checked or ()), *evaluated.checks],
            resumes=evaluated.resumes,
            negative=evaluated.negative,
            faults=evaluated.faults,
            determinism=evaluated.determinism,
            nonfinite=evaluated.nonfinite,
            coverage=evaluated.coverage,
            next_lr=evaluated.next_lr,
            across=evaluated.across,
        )

    @property
    def all_checks_passed(self) -> bool:
        return self.error is None and bool(self.checks) and all(c.passed for c in self.checks)

    @property
    def deterministic(self) -> bool:
        """Not shown to differ from itself: what the verdict reads. verification.json writes `determinism`'s own
        value (null when nothing established it), never this one."""
        return self.determinism.deterministic is not False

    @property
    def positive(self) -> bool:
        """Every resume that must match does, and every history that must be a prefix is."""
        if self.legacy_positive is not None:
            return self.legacy_positive
        must_match = (
            CheckKind.PREFIX,
            CheckKind.RESUME,
            CheckKind.RESTORE,
            CheckKind.CADENCE,
            CheckKind.CHECKPOINT,
            CheckKind.PREEMPTION,
        )
        return self.error is None and all(c.passed for c in self.checks if c.id.kind in must_match)

    @property
    def negative_divergence_detected(self) -> bool:
        return self.negative is not None and self.negative.verdict == DIVERGENT

    @property
    def blind_to(self) -> list[str]:
        return [part for part, fault in self.faults.items() if fault.status is FaultStatus.NOT_CAUGHT]

    @property
    def not_applicable(self) -> dict[str, str]:
        """The faults that blocked nothing, each with the call the script never made (judge/records/applies.py)."""
        return {part: fault.not_applicable for part, fault in self.faults.items() if fault.not_applicable is not None}

    @property
    def notes(self) -> list[str]:
        """What the comparison left out, said once for the whole verification."""
        if self.continuous_made is None:
            return []
        return [f"the continuous run made {self.continuous_made} updates; the first {self.steps} are compared"]

    @property
    def full_resume(self) -> Resume | None:
        return self.resumes.get(RESUMED)

    def checked(self) -> list[CheckedCheckpoint]:
        """What `check` says of the checkpoints resumed from that the verifier did not admit itself."""
        return [t.check for t in self.trajectories.values() if t.check is not None]

    def reuse_line(self) -> str | None:
        """--reuse-runs: the runs copied from the earlier verification, and why the others ran again."""
        copied = {name: t.reused_from for name, t in self.trajectories.items() if t.reused_from}
        again = "; ".join(f"{name} ({t.not_reused})" for name, t in self.trajectories.items() if t.not_reused)
        said = f"reused from {next(iter(copied.values()))}: {', '.join(copied)}" if copied else "reused no run"
        return (said + (f"; ran again: {again}" if again else "")) if copied or again else None

    def failed(self) -> list[Check]:
        return [c for c in self.checks if not c.passed]

    def of_kind(self, *kinds: CheckKind) -> list[Check]:
        return [c for c in self.checks if c.id.kind in kinds]

    @property
    def verdict(self) -> Verdict:
        """The outcome and what it rests on, as every report says it (verify/report/verdict.py)."""
        return verdict(self)

    def to_json(self) -> dict[str, Any]:
        """verification.json: the fields, among what it says for a reader (computed again when it is read back)."""
        full, negative = self.full_resume, self.negative
        comparison: dict[str, Any] = {}
        if full is not None and negative is not None:
            comparison = {"full_resume": full, "no_rng_resume": negative, "resumes": self.resumes}
        return codec.encode(
            {
                "all_checks_passed": self.all_checks_passed,
                "positive": self.positive,
                "negative_divergence_detected": self.negative_divergence_detected,
                "deterministic": self.determinism.deterministic,  # as `determinism` says: null when not established
                "error": self.error,
                "verdict": self.verdict.to_json(),  # written for a reader; read back, it is computed again
                "protocol": self.protocol,
                "train_cmd": self.train_cmd,
                "resume_cmd": self.resume_cmd,
                "steps": self.steps,
                "interrupt_at": self.interrupt_at,
                "segments": self.segments,
                "tolerance": {"atol": self.atol, "rtol": 0.0},
                "allowed": self.allowed,
                "environment": self.environment,
                "trajectories": self.trajectories,
                "checks": [{**codec.encode(c), "failure": failure(c, self)} for c in self.checks],
                "comparison": comparison,
                "faults": self.faults,
                "blind_to": self.blind_to,
                "not_applicable": self.not_applicable,
                "continuous_made": self.continuous_made,
                "notes": self.notes,  # written for a reader: read back, they are computed again
                "parts": self.parts,
                "determinism": self.determinism,
                "nonfinite": self.nonfinite,
                "coverage": self.coverage or {},  # {}: nothing to say of the epochs
                "next_lr": self.next_lr,
                **({"plot": self.plot} if self.plot else {}),
                **({"across": self.across} if self.across is not None else {}),
            }
        )

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Verification":
        """A verification.json, this version's or an older one (docs/verification-json.md); CodecError names the
        first key that does not hold what this version writes there."""
        v = codec.decode(cls, _as_fields(codec.decode(dict[str, Any], d, "verification.json")), "verification.json")
        legacy = any(c.id.kind is CheckKind.LEGACY for c in v.checks)
        positive = codec.decode(bool | None, d.get("positive"), "verification.json.positive") if legacy else None
        return replace(v, legacy_positive=positive)

    def write(self, path: Path) -> None:
        """verification.json, written atomically."""
        protocol.write_json(path, self.to_json())


def _as_fields(d: dict[str, Any]) -> dict[str, Any]:
    """verification.json's keys read as the fields they are written from, where they are not written under the
    field's own name: the tolerance's atol, the comparison's resumes and negative control, no coverage as {}."""
    tolerance = codec.decode(dict[str, Any], d.get("tolerance", {}), "verification.json.tolerance")
    comparison = codec.decode(dict[str, Any], d.get("comparison", {}), "verification.json.comparison")
    read = {"atol": tolerance.get("atol", 0.0), "resumes": comparison.get("resumes", {})}
    coverage = d.get("coverage")  # {}: to_json's word for no coverage
    read |= {"negative": comparison.get("no_rng_resume"), "coverage": None if coverage == {} else coverage}
    # A document that leaves out its header's error or command (a hand-made one) reads as completed, of no command,
    # as it always has.
    return {"error": None, "train_cmd": "", **d, **read}


def ran(t: Trajectory) -> TrajectoryRecord:
    """One process as it ran, with the checkpoint it was accepted with."""
    checkpoint = t.outcome.accepted.checkpoint if t.outcome.accepted is not None else None
    return TrajectoryRecord(
        argv=tuple(t.argv),
        status=t.outcome.status,
        exit_code=t.outcome.exit_code,
        wall_seconds=t.outcome.seconds,
        checkpoint_sha256=checkpoint.sha256 if checkpoint else None,
        checkpoint_files=checkpoint.files if checkpoint else (),
        log=str(t.log),
        error=t.outcome.error,
        ran_on=t.outcome.placement,
        run_key=t.outcome.run_key,
        reused_from=str(t.outcome.reused_from) if t.outcome.reused_from is not None else None,
        not_reused=t.outcome.not_reused,
        stopped_after=t.observe.stop[1] if t.observe is not None and t.observe.stop is not None else None,
        preemption=t.outcome.preempted,
    )
