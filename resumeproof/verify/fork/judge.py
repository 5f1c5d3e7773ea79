"""`resumeproof fork`'s judgement from what the branches wrote and the observer saw (docs/fork.md), bit for bit: does
each branch continue the original run's history, does the control reproduce the original run's continuation (or its
own repeat), does each branch's first update start from the control's inputs; and where each parts from the control.

Each finding is a `Check` (verify/vocabulary/findings.py) with its identity. The first update is held as
judge/records/first_update.py holds a resume's against the continuous run, with the control in the continuous run's
place: its records numbered by global update, and the generator states it restored as the state the update before the
fork ended with.
"""

from dataclasses import replace

from resumeproof.common import observation as o
from resumeproof.common.protocol import CONTROL, CONTROL_REPEAT, CheckId, CheckKind
from resumeproof.verify.fork.original import Original
from resumeproof.verify.fork.result import BranchResult, Point
from resumeproof.verify.judge import compare
from resumeproof.verify.judge.records import first_update
from resumeproof.verify.judge.records.first_update import Observed
from resumeproof.verify.run.summary import Summary
from resumeproof.verify.vocabulary.findings import Check

EXACT = 0.0  # bit for bit: a fork is fair only when proven
# What the first update starts from, restored or drawn before its forward pass; the rest it computes from them, where an
# override may act.
INPUT_LABELS = ("generators", "batch", "model", "GradScaler", "optimizer state")
INPUTS = [item for item in first_update.CHECKS if item[0] in INPUT_LABELS]
THE_CONTROL = "the control"
Ran = tuple[Summary, Observed]  # what a branch's process wrote, and what the observer saw of it


def fork_step(original: Original, control: Summary, steps: int) -> int:
    """The step every branch starts from: as the original run's files name it, else as the control reports it."""
    return original.step if original.step is not None else control.step - steps


def continues(name: str, summary: Summary, control: Summary, original: Original, k: int, steps: int) -> Check:
    """The branch reports step k+N and its first k records are the original run's (where its files hold them) and
    the control's: the history the checkpoint carried, continued, never reset."""

    def check(detail: str, passed: bool = False) -> Check:
        title = f"{name}: its history continues the original run's from step {k}, never reset"
        return Check(id=CheckId(kind=CheckKind.CONTINUES, trajectory=name), name=title, passed=passed, detail=detail)

    if summary.step != k + steps:
        return check(
            f"{name} reports step {summary.step}, not {k} + {steps}: its history does not continue from step {k}"
        )
    head = summary.history[:k]
    held = [(step, record) for step, record in sorted(original.records.items()) if step <= k]
    for against, found in (
        ("the original run's", [compare.compare(r, head[step - 1], EXACT, f"history[{step - 1}]") for step, r in held]),
        ("the control's", [compare.compare(control.history[:k], head, EXACT, "history")]),
    ):
        differs = _first(found)
        if differs:
            return check(f"{name}'s history differs from {against} at {differs}")
    return check(f"its {k} records up to the fork point equal the control's and the original run's {len(held)}", True)


def continuation(control: Summary, original: Original, k: int, steps: int) -> Check | None:
    """The control's updates equal the original run's after the fork point, as many as its files hold (None: they
    hold none); where the original run's summary is at the control's step, the whole summary too."""
    after = original.after(k, steps)
    if not after:
        return None
    whole = original.summary is not None and original.summary.step == control.step
    if original.summary is not None and whole:
        found = [compare.summaries(original.summary, control, EXACT)]
    else:  # by step: a control with fewer records (one that started its history over) holds null there
        mine = {r["step"]: r for r in control.history}
        found = [compare.compare(r, mine.get(r["step"]), EXACT, f"history[{r['step'] - 1}]") for r in after]
    also = f" and its summary at step {control.step}" if whole else ""
    name = f"{CONTROL}: reproduces the original run's {len(after)} updates after step {k}{also}, bit for bit"
    differs = _first(found)
    detail = f"the control does not reproduce the original run's continuation: {differs}" if differs else None
    identity = CheckId(kind=CheckKind.CONTINUATION, trajectory=CONTROL)
    return Check(id=identity, name=name, passed=not differs, detail=detail)


def determinism(control: Summary, repeat: Summary, seen: Observed, again: Observed, k: int, parts: tuple) -> Check:
    """The control's repeat, a fresh process of the same command, equals it: summary and first update."""
    differs = _first([compare.summaries(control, repeat, EXACT)])
    if not differs:
        d = first_update.diagnose(shifted(seen, k), again, k, parts, reference=THE_CONTROL) if seen and again else None
        differs = f"its first update: {d.explanation}" if d else None
    detail = None
    if differs:
        detail = f"the trainer is not deterministic: {CONTROL_REPEAT} differs from the control at {differs}; no "
        detail += "difference between the branches can be laid on an override"
    identity = CheckId(kind=CheckKind.DETERMINISM, trajectory=CONTROL_REPEAT)
    shown = f"{CONTROL_REPEAT}'s summary and first update equal the control's"
    return Check(id=identity, name=f"{CONTROL}: repeats itself bit for bit", passed=not differs, detail=detail or shown)


def inputs(name: str, control: Observed, seen: Observed, k: int, parts: tuple, rows_same: bool | None) -> Check:
    """The branch's first update starts from what the control's started from: generators, batch, weights, GradScaler,
    optimizer state, as far as the observer's records show them."""
    identity = CheckId(kind=CheckKind.INPUTS, trajectory=name)
    title = f"{name}: its first update starts from the control's {', '.join(INPUT_LABELS)}"
    missing = _incomparable(control, seen, name)
    if missing:
        return Check(id=identity, name=title, passed=False, detail=f"{name}'s inputs are not proven: {missing}")
    d = first_update.diagnose(shifted(control, k), seen, k, parts, rows_same, INPUTS, THE_CONTROL)
    if d is None:
        return Check(id=identity, name=title, passed=True, detail="the same, digest for digest")
    evidence = f"observer records of the first update of {name} and of the control"
    detail = f"{name}'s first update does not start from the control's state: {d.explanation}"
    return Check(id=identity, name=title, passed=False, detail=detail, diagnosis=replace(d, evidence=evidence))


def branch(
    name: str, overrides: tuple[str, ...], control: Ran, ran: Ran, k: int, parts: tuple
) -> tuple[Check, BranchResult]:
    """One branch against the control: whether its first update starts from the control's inputs, and its course
    from the fork point (its curve, where it parts from the control, what first differs in its first update)."""
    rows = rows_same(control[0], ran[0], k)
    check = inputs(name, control[1], ran[1], k, parts, rows)
    parts_at, parted_by = parting(control[0], ran[0], k)
    comparable = _incomparable(control[1], ran[1], name) is None
    changed = _first_difference(control[1], ran[1], k, parts, rows) if comparable else None
    course = curve(ran[0], k)
    return check, BranchResult(
        name=name, overrides=overrides, curve=course, parts_at=parts_at, parted_by=parted_by, first_difference=changed
    )


def _first_difference(control: Observed, seen: Observed, k: int, parts: tuple, rows_same: bool | None) -> str | None:
    """What first differs in the branch's first update from the control's, in the order the update consumes it: the
    override at work, where the inputs are the same. None: nothing the observer recorded differs."""
    d = first_update.diagnose(shifted(control, k), seen, k, parts, rows_same, reference=THE_CONTROL)
    return d.explanation if d else None


def parting(control: Summary, summary: Summary, k: int) -> tuple[int | None, str | None]:
    """The first update after the fork point whose history record differs from the control's, and how; with the same
    history, None and the summaries' first difference (None: identical)."""
    ours, theirs = control.history, summary.history
    for i in range(k, min(len(ours), len(theirs))):
        found = compare.compare(ours[i], theirs[i], EXACT, f"history[{i}]")
        if not found.concordant:  # every difference of that record: a pivot's mark, and the lr it applied
            return ours[i]["step"], "; ".join(f"{m.path}: {m.reason}" for m in found.mismatches[:3])
    return None, _first([compare.summaries(control, summary, EXACT)])


def curve(summary: Summary, start: int, end: int | None = None) -> tuple[Point, ...]:
    """The loss curve of history records start+1 .. end (to the last)."""
    return tuple(Point(step=r["step"], loss=r["loss"], lr=r["lr"]) for r in summary.history[start:end])


def rows_same(control: Summary, summary: Summary, k: int) -> bool | None:
    """Whether the branch's first update took the control's rows (None: a history too short to say)."""
    a, b = control.rows(k + 1), summary.rows(k + 1)
    return None if a is None or b is None else a == b


def shifted(seen: Observed, k: int) -> Observed:
    """The control's records in the continuous run's place: its update n as update k+n, and the generator states it
    restored before its first update as the state update k ended with."""
    found = {}
    for rank, record in seen.items():
        ended = o.Recorded(after=o.After(generators=_restored(record)))
        updates = {k: ended} | {k + n: u for n, u in record.updates.items()}
        found[rank] = replace(record, updates=updates)
    return found


def _restored(record: o.Observation) -> dict[str, dict[str, str]]:
    """The last state each generator was restored to before the process's first update."""
    found: dict[str, dict[str, str]] = {}
    for r in record.restores:
        if r.before == 1:
            found.setdefault(r.group, {})[r.generator] = r.digest
    return found


def _unrecorded(seen: Observed, name: str) -> str | None:
    """Why the records cannot show a process's first update, or None where they can."""
    if not seen:
        return f"no observer records of {name}"
    for rank, record in seen.items():
        if record.at(1) is None:
            where = f" on rank {rank}" if rank is not None else ""
            why = f" ({record.failed})" if record.failed else ""
            return f"no observer record of {name}'s first update{where}{why}"
    return None


def _incomparable(control: Observed, seen: Observed, name: str) -> str | None:
    """Why the records cannot hold a branch's first update against the control's; None where they can."""
    unrecorded = _unrecorded(control, CONTROL) or _unrecorded(seen, name)
    if unrecorded:
        return unrecorded
    return None if set(control) == set(seen) else f"{name} ran with other ranks than the control"


def _first(found: list[compare.Comparison]) -> str | None:
    """The first mismatch of several comparisons, as `path: reason`; None where all agree."""
    return next((f"{c.mismatches[0].path}: {c.mismatches[0].reason}" for c in found if c.mismatches), None)
