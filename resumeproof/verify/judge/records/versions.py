"""A resume by other code: the continuous and interrupted runs in one environment, the resumes in another (--resume-cmd
naming another checkout of the trainer, another interpreter or torch; docs/checks.md, "Resumes across versions"),
told by the observer's records and judged from them (a protocol trainer's summaries: judge/summaries/versions.py).

The observer records what ran each process (common/observation.py's Environment). Where the resumes' environment is
not the continuous run's, each resume is judged in two tiers that an auditor reads apart:

- the restore: the state entering the first resumed update (generators, model, module attributes, other modules,
  GradScaler, optimizer state, LR schedulers, hyper-parameters, averaged models) equals, bit for bit, the continuous
  run's entering update k+1, as the observer recorded both. Nothing has run yet: a part that differs was lost at the
  restore, and is named.
- the trajectory: the resume's summary against the continuous run's (--atol). Where the restore was exact, a
  difference is the resume's code computing otherwise (an intended change is not a lost part): from which update,
  by how much, and where it moved first (the first thing the first resumed update computed otherwise, from the
  records; else the first field of the history that differs).
"""

import hashlib
from collections.abc import Mapping
from dataclasses import replace

from resumeproof.common.observation import Environment, Observation
from resumeproof.common.protocol import CONTINUOUS, RESUMED, CheckId, CheckKind
from resumeproof.verify.judge.records import first_update
from resumeproof.verify.vocabulary.findings import (
    AT_RESTORE,
    CHANGED,
    CHANGED_CODE,
    Across,
    Check,
    Diagnosis,
    Resume,
    Side,
)

Observed = Mapping[int | None, Observation]
# What a resume must bring back, in the order the first update consumes it: its state, nothing it computes (a batch
# or a target is what the resume's code makes of the restored state).
STATE = (
    "generators",
    "model",
    "module attributes",
    "other modules",
    "GradScaler",
    "optimizer state",
    "LR schedulers",
    "hyper-parameters",
    "averaged models",
)
RESTORED: first_update.Checks = [(label, check) for label, check in first_update.CHECKS if label in STATE]
# Where a trajectory moves first, by the field of the history record that differs first.
MOVED = {"loss": "the loss", "lr": "the learning rate", "rows": "the batch (its rows)", "scale": "the loss scale"}


def across(observed: Mapping[str, Observed]) -> Across | None:
    """The two environments, where the continuous run's and the full resume's records name different ones; None
    where they are the same, or either left no record of its environment."""
    run, resume = _environment(observed.get(CONTINUOUS)), _environment(observed.get(RESUMED))
    if run is None or resume is None:
        return None
    found = differences(run, resume)
    both = run.code.keys() & resume.code.keys()
    return Across(run=_side(run, both), resume=_side(resume, both), differs=found) if found else None


def differences(run: Environment, resume: Environment) -> tuple[str, ...]:
    """How the resume's environment differs from the run's: the interpreter, Python, torch, the script's content,
    and each file of the code both loaded (by its path from the script's folder) whose content differs. A file only
    one of them loaded is no difference: a process that resumes imports what a fresh one does not."""
    found = [
        f"{what} {a} vs {b}"
        for what, a, b in (
            ("interpreter", run.executable, resume.executable),
            ("Python", run.python, resume.python),
            ("torch", run.torch, resume.torch),
        )
        if a != b
    ]
    scripts = (_script_digest(run), _script_digest(resume))
    if scripts[0] != scripts[1]:
        found.append(f"script {run.script} vs {resume.script}")
    scripts_own = {path for env in (run, resume) if (path := _script_path(env)) is not None}  # said as the script
    both = run.code.keys() & resume.code.keys() - scripts_own
    changed = sorted(path for path in both if run.code[path] != resume.code[path])
    if changed:
        shown = ", ".join(changed[:3]) + (f" and {len(changed) - 3} more" if len(changed) > 3 else "")
        found.append(f"code: {shown}")
    return tuple(found)


def restored(name: str, continuous: Observed, resumed: Observed, k: int, parts: tuple[str, ...]) -> Check | None:
    """The restore tier from the records: every part's state entering the first resumed update against update k+1's;
    None where the records cannot tell (none, another number of ranks)."""
    if first_update.held_updates(continuous, resumed, k, parts) is None:
        return None
    lost = first_update.diagnose(continuous, resumed, k, parts, checks=RESTORED)
    if lost is not None:
        lost = replace(lost, rule=AT_RESTORE)
    return Check(
        id=CheckId(kind=CheckKind.RESTORE, trajectory=name),
        name=f"{name}: its first update starts from what the interrupted process held for update {k + 1}, every part "
        "bit for bit (a resume by other code)",
        passed=lost is None,
        detail=None if lost is None else lost.explanation,
        diagnosis=lost,
        resumed_at=k,
    )


def changed(
    continuous: Observed, resumed: Observed, k: int, parts: tuple[str, ...], first: tuple[int | None, str | None, str]
) -> Diagnosis:
    """Restored exactly, and the trajectory moved: where first. `first`: the first update that differs (None: only
    the end state), what differs there (the fields, as a reader reads them) and the evidence. The first resumed
    update is read off the records, in its causal order, where they show it computed otherwise."""
    step, what, evidence = first
    updates = first_update.held_updates(continuous, resumed, k, parts)
    found = first_update.first_difference(updates, first_update.CHECKS) if updates is not None else None
    if found is not None and step in (None, k + 1):
        same, findings = found
        where = ", ".join([*(f"same {label}" for label in same), next(iter(findings.values())).said])
        moved = f"update {k + 1}, the first resumed one: {where}"
    elif step is not None:
        moved = f"update {step}" + (f": {what}" if what else "")
    else:
        moved = "the end state (every update of the history the same)"
    explanation = f"every part restored exactly; it moved first at {moved}: the resume's code computes otherwise, "
    explanation += "no part was lost"
    return Diagnosis(lost=(), rule=CHANGED_CODE, step=step or k + 1, evidence=evidence, explanation=explanation)


# Under other code every resume's trajectory may move with the code: a run that must diverge (the negative control, a
# fault) shows what it omits only where its first update is fed otherwise than the continuous run's k+1.
SAME_WHERE_FED = (
    "its first update is fed what the continuous run's was, every part bit for bit: under other code its trajectory "
    "moves with the code, so its divergence shows nothing of what it omits"
)


def unpowered(continuous: Observed, run: Observed, k: int, parts: tuple[str, ...]) -> Diagnosis | None:
    """Why a run that must diverge shows nothing under other code: its first update fed exactly as the continuous
    run's (generators, batch, model, target, optimizer, schedulers, ...); None where it is fed otherwise, or the
    records cannot tell."""
    updates = first_update.held_updates(continuous, run, k, parts)
    if updates is None or first_update.first_difference(updates, first_update.INPUTS) is not None:
        return None
    evidence = f"observer records of update {k + 1} and the first resumed one"
    return Diagnosis(lost=(), rule=CHANGED_CODE, step=k + 1, evidence=evidence, explanation=SAME_WHERE_FED)


def marked(entry: Resume) -> Resume:
    """A resume's entry, CHANGED where its restore was exact and its code moved its trajectory."""
    d = entry.diagnosis
    return replace(entry, verdict=CHANGED) if d is not None and d.rule == CHANGED_CODE else entry


def _environment(records: Observed | None) -> Environment | None:
    if not records:
        return None
    first = records[min(records, key=lambda rank: -1 if rank is None else rank)]
    return first.environment


def _script_digest(environment: Environment) -> str:
    """The script's content as its code recorded it (by its path from the script's folder), else its path."""
    path = _script_path(environment)
    return environment.code[path] if path is not None else environment.script


def _script_path(environment: Environment) -> str | None:
    """The script's path among its code's (from the script's folder), where its code holds it."""
    named = [path for path in environment.code if f"/{environment.script}".endswith(f"/{path}")]
    return max(named, key=len) if named else None


def _side(environment: Environment, both: set[str]) -> Side:
    """One side, its code's sha256 over the files both sides loaded: the same code reads the same."""
    listed = "".join(f"{path}\0{environment.code[path]}\n" for path in sorted(both))
    return Side(
        executable=environment.executable,
        python=environment.python,
        torch=environment.torch,
        script=environment.script,
        code_sha256=hashlib.sha256(listed.encode()).hexdigest(),
        files=len(both),
    )
