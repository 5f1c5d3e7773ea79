"""What failed, said once: the sentence of each failed check and the verdict line, built from the typed checks and
findings, by a check's `CheckKind` (never its wording), and rendered alike by the terminal, Markdown, JUnit,
verification.json and the pytest plugin.

A sentence says the trajectory, where it differs and what differs, then what the check's own diagnosis blames, in
the words the diagnosis line uses (`Diagnosis.head`), or "cause unknown": a verdict never names a part its
diagnosis does not.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from resumeproof.common.protocol import PREEMPTED, CheckKind
from resumeproof.verify.vocabulary.findings import CHANGED_CODE, Across, Check, Determinism, Diagnosis, Fault


class Judged(Protocol):
    """What a verdict reads of a verification (report/result.py's `Verification`, which renders its verdict here)."""

    error: str | None
    faults: dict[str, Fault]
    determinism: Determinism
    across: Across | None

    @property
    def all_checks_passed(self) -> bool: ...

    @property
    def deterministic(self) -> bool: ...

    @property
    def negative_divergence_detected(self) -> bool: ...

    @property
    def not_applicable(self) -> dict[str, str]: ...

    def failed(self) -> list[Check]: ...

    def of_kind(self, *kinds: CheckKind) -> list[Check]: ...


PASSED, FAILED, NOT_DETERMINISTIC, INCOMPLETE = "passed", "failed", "not-deterministic", "could-not-complete"
LABELS = {PASSED: "PASSED", FAILED: "FAILED", NOT_DETERMINISTIC: "NOT DETERMINISTIC", INCOMPLETE: "could not complete"}
EXIT_CODES = {PASSED: 0, FAILED: 1, NOT_DETERMINISTIC: 1, INCOMPLETE: 2}
SHOWN = 3  # failed trajectories the verdict line says; the rest are named (each report lists every failed check)
# The earliest evidence first: a resume's restore before its trajectory, a resume before the faults it explains.
ORDER: tuple[CheckKind, ...] = (
    CheckKind.PREEMPTION,
    CheckKind.RESTORE,
    CheckKind.RESUME,
    CheckKind.CADENCE,
    CheckKind.PREFIX,
    CheckKind.FINITE,
    CheckKind.NEGATIVE_CONTROL,
    CheckKind.FAULT,
    CheckKind.CHECKPOINT,
    CheckKind.DETERMINISM,
)


@dataclass(frozen=True)
class Verdict:
    """The outcome and what it rests on: the last line of every report."""

    outcome: str  # PASSED, FAILED, NOT_DETERMINISTIC or INCOMPLETE
    said: str  # what follows the label

    @property
    def label(self) -> str:
        return LABELS[self.outcome]

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.outcome]

    @property
    def line(self) -> str:
        return f"{self.label}: {self.said}"

    def to_json(self) -> dict[str, Any]:
        return {"outcome": self.outcome, "exit_code": self.exit_code, "line": self.line}


def verdict(v: Judged) -> Verdict:
    """Could not complete, not deterministic, passed or failed; each says why."""
    if v.error:
        return Verdict(INCOMPLETE, v.error)
    d = v.determinism
    where = _from(d.first_step, d.first_mismatch)
    if not v.deterministic and not d.within_spread:
        return Verdict(NOT_DETERMINISTIC, f"{d.detail or 'the trainer differs from itself'}{where}; no part is blamed")
    other = f"resumed by other code ({v.across.said}): " if v.across is not None else ""
    if v.all_checks_passed:
        return Verdict(PASSED, other + _passed(v))
    judged = f"not deterministic (differs from itself{where}), so judged by its restore and its measured spread; "
    return Verdict(FAILED, other + (f"{judged}failed: " if d.within_spread else "") + _failed(v))


def failure(c: Check, v: Judged) -> str | None:
    """The sentence of one check that failed (None for one that passed): what differs, where, and the cause."""
    if c.passed:
        return None
    say = SAY.get(c.id.kind)
    return say(c, v) if say is not None else denied(c)


def _passed(v: Judged) -> str:
    extra = _faults_said(v)
    control = "resume without RNG restore divergent" if v.negative_divergence_detected else _no_control(v)
    if v.determinism.within_spread:
        d = v.determinism
        spread = f"not deterministic (differs from itself{_from(d.first_step, d.first_mismatch)})"
        resumes = "every restore exact, every resume within its measured run-to-run spread"
        return f"{spread}, so compared within its measured spread, not bit for bit: {resumes}, {control}{extra}"
    exact = "every restore exact and " if v.across is not None else ""
    return f"{exact}every resume concordant{_preempted(v)}, {control}{extra}"


def _preempted(v: Judged) -> str:
    """The job Slurm preempted, where one was: restarted from which update."""
    said = [c for c in v.of_kind(CheckKind.PREEMPTION) if c.passed and c.id.trajectory == PREEMPTED]
    return "".join(f" (the job Slurm preempted among them, restarted from update {c.resumed_at})" for c in said)


def _faults_said(v: Judged) -> str:
    """The faults of a pass: all caught, and those that could not apply with the call the script never made."""
    unapplied = v.not_applicable
    caught = len(v.faults) - len(unapplied)
    restarted = len(v.faults.keys() & {c.id.trajectory for c in v.of_kind(CheckKind.PREEMPTION)})
    among = f" ({restarted} of them in a job Slurm restarted)" if restarted else ""
    said = f", all {caught} faults{' that applied' if unapplied else ''} caught{among}" if caught else ""
    if unapplied:
        said += "; not applicable: " + ", ".join(f"{part} ({why})" for part, why in unapplied.items())
    return said


def _no_control(v: Judged) -> str:
    """`verify --observe` where blocking the generators' setters could not change the run: what its check says."""
    return next((c.name for c in v.of_kind(CheckKind.NEGATIVE_CONTROL)), "no negative control")


def _failed(v: Judged) -> str:
    """The failed checks, one per trajectory (its earliest evidence), the first SHOWN said, the others named."""
    first: dict[str, Check] = {}
    for c in sorted(v.failed(), key=lambda c: ORDER.index(c.id.kind) if c.id.kind in ORDER else len(ORDER)):
        first.setdefault(c.id.trajectory or c.name, c)
    if not first:
        return "no check ran"
    said = ". ".join(failure(c, v) or "" for c in list(first.values())[:SHOWN])
    rest = list(first)[SHOWN:]
    return said + (f". Also failed: {', '.join(rest)}" if rest else "")


def _resume(c: Check, v: Judged) -> str:
    how = "leaves its measured run-to-run spread" if v.determinism.within_spread else "differs from continuous"
    if c.diagnosis is not None and c.diagnosis.rule == CHANGED_CODE:  # its restore exact: where it moved, how much
        by = f", by up to {c.max_abs_diff:.3g}" if c.max_abs_diff else ""
        return f"{_name(c)}{_resumed(c)} {how}{_where(c)}{by}; {c.diagnosis.head}: {c.diagnosis.explanation}"
    return f"{_name(c)}{_resumed(c)} {how}{_where(c)}; {_cause(c, v)}"


def _preemption(c: Check, v: Judged) -> str:
    """The course the job took, then how its end compares (its own RESUME check), so that a replay is judged too."""
    if not c.detail:
        return denied(c)
    end = next((r for r in v.of_kind(CheckKind.RESUME) if r.id.trajectory == c.id.trajectory), None)
    if end is None:
        return f"{_name(c)}, the job Slurm preempted, was {c.detail}"
    judged = "ends as continuous does" if end.passed else f"differs from continuous{_where(end)}: {_cause(end, v)}"
    return f"{_name(c)}, the job Slurm preempted, was {c.detail}; its run {judged}"


def _cadence(c: Check, v: Judged) -> str:
    return f"{_name(c)}, which writes a checkpoint every step, differs from continuous{_where(c)}; {_cause(c, v)}"


def _restore(c: Check, v: Judged) -> str:
    held = f" for update {c.resumed_at + 1}" if c.resumed_at is not None else ""
    at = f" (it differs at {c.first_mismatch})" if c.first_mismatch else ""
    return f"{_name(c)}'s first update does not start from what the interrupted process held{held}{at}; {_cause(c, v)}"


def _prefix(c: Check, v: Judged) -> str:
    return f"{_name(c)}'s history is not the first records of continuous: it differs{_where(c)}; {_cause(c, v)}"


def _negative(c: Check, v: Judged) -> str:
    how = "did not leave the measured spread" if v.determinism.within_spread else "did not diverge from continuous"
    why = f": {c.diagnosis.explanation}" if c.diagnosis is not None and not c.diagnosis.lost else ""
    return f"{_name(c)}, the resume without RNG restore (the negative control), {how}{why}"


def _fault(c: Check, v: Judged) -> str:
    own = c.id.trajectory in v.faults  # a preempted job's restart without the part: keyed by its trajectory
    fault = v.faults.get(c.id.trajectory or "") if own else v.faults.get(c.id.part or "")
    how = "did not differ at its restore nor beyond the spread" if v.determinism.within_spread else "did not diverge"
    said = [c.detail] if c.detail else []
    said += ["identical to the full resume"] if fault is not None and fault.identical_to_full_resume else []
    which = f"{c.id.trajectory}, the job Slurm restarted without {c.id.part}," if own else f"resume without {c.id.part}"
    return f"{which} {how} ({'; '.join(said) or 'it equals the continuous run'})"


def _finite(c: Check, v: Judged) -> str:
    return f"{_name(c)} holds {c.detail or 'a number that is not finite'}"


def _checkpoint(c: Check, v: Judged) -> str:
    return f"{_name(c)}'s checkpoint fails its fingerprint or weights_only check: {c.detail or 'refused'}"


def _determinism(c: Check, v: Judged) -> str:
    d = v.determinism
    return f"continuous differs from its repeat{_from(d.first_step, d.first_mismatch)}; no part is blamed"


def denied(c: Check) -> str:
    """A check whose kind has no sentence of its own (chaos, fork, export, a legacy document's): its claim, denied."""
    at = f" (at {c.first_mismatch})" if c.first_mismatch else ""
    return f"{c.name}: does not hold{at}" + (f": {c.detail}" if c.detail else "")


SAY: dict[CheckKind, Callable[[Check, Judged], str]] = {
    CheckKind.RESUME: _resume,
    CheckKind.PREEMPTION: _preemption,
    CheckKind.CADENCE: _cadence,
    CheckKind.RESTORE: _restore,
    CheckKind.PREFIX: _prefix,
    CheckKind.NEGATIVE_CONTROL: _negative,
    CheckKind.FAULT: _fault,
    CheckKind.FINITE: _finite,
    CheckKind.CHECKPOINT: _checkpoint,
    CheckKind.DETERMINISM: _determinism,
}


def _name(c: Check) -> str:
    return c.id.trajectory or c.name


def _resumed(c: Check) -> str:
    return f" (from step {c.resumed_at})" if c.resumed_at is not None else ""


def _where(c: Check) -> str:
    """From which update it differs and the first path that does, or the path alone where the update is unknown."""
    if c.first_update is None:
        return f" at {c.first_mismatch}" if c.first_mismatch else ""
    path = (c.first_mismatch or "").removeprefix(f"update {c.first_update}: ")  # the records' paths say it already
    return _from(c.first_update, path)


def _from(update: int | None, path: str | None) -> str:
    return (f" from update {update}" if update is not None else "") + (f" ({path})" if path else "")


def _cause(c: Check, v: Judged) -> str:
    """What the check's own diagnosis blames, in its words; nothing where the trainer differs from itself."""
    if not v.deterministic and not v.determinism.within_spread:
        return "no part is blamed: the trainer is not deterministic"
    if c.diagnosis is not None:
        return c.diagnosis.head
    restore = _restore_of(c, v)  # a resume whose restore failed is diagnosed once, at its restore
    return f"{restore.head} (at its restore)" if restore is not None else "cause unknown"


def _restore_of(c: Check, v: Judged) -> Diagnosis | None:
    """The diagnosis of the failed restore of the same trajectory, where another check of it failed there."""
    if c.id.kind is CheckKind.RESTORE or c.id.trajectory is None:
        return None
    found = (r.diagnosis for r in v.of_kind(CheckKind.RESTORE) if r.id.trajectory == c.id.trajectory and not r.passed)
    return next((d for d in found if d is not None), None)
