"""A protocol trainer that is not deterministic, judged in two tiers (docs/checks.md, "A trainer that is not
deterministic"):

- the restore: beside each resume, the same command from the same checkpoint for 0 updates (plan.restores). Its
  summary is the state that resume starts from: `step`, `history`, `state` and `next` (every generator's next
  draw, the next lr) must equal, bit for bit, what the run it resumed from reported when it saved. This holds
  whatever the kernels do, and it is the proof; a part that differs is named as for a deterministic trainer.
  `eval` is left out: it is computed after the restore, by kernels that may round differently. What the first
  resumed update is fed (its batch, its target, module attributes, other modules), which no summary reports, is
  held as the observer recorded it (`fed`): against a second resume of the same checkpoint, ended before its
  first step, and where every run of the command feeds update k+1 alike, against that.
- the trajectory: every update of the resume, and its end state, within the trainer's own run-to-run spread
  (verify/judge/spread.py), measured by the continuous run, its repeats and the interrupted runs' first updates.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from resumeproof.common import protocol
from resumeproof.common.flatfile import LOST as FLAT_CAUSE
from resumeproof.common.observation import (
    AFTER,
    ATTRIBUTES,
    BATCH,
    FORWARD,
    GENERATORS,
    LOSS,
    START,
    TARGET,
    Forward,
    Loss,
    Observation,
    Recorded,
    Start,
)
from resumeproof.common.protocol import (
    CONTINUOUS,
    EVAL,
    FLAT,
    HISTORY,
    NEXT,
    PROGRESS,
    REPEATS,
    RESUMED,
    STATE,
    STEP,
    CheckId,
    CheckKind,
)
from resumeproof.verify.judge import spread
from resumeproof.verify.judge.compare import compare_keys, merge
from resumeproof.verify.judge.parts import part_for
from resumeproof.verify.judge.records import exact
from resumeproof.verify.judge.records.first_generators import ANOTHER_RESUME
from resumeproof.verify.judge.spread import Run, measure, outside_check, outside_diagnosis
from resumeproof.verify.judge.summaries.diagnosis import Context, facts, identical
from resumeproof.verify.judge.summaries.held import NO_RANDOM_STATE, Against, Held, compared, resume_entry
from resumeproof.verify.run.summary import Summary
from resumeproof.verify.run.trajectories import Trajectory
from resumeproof.verify.vocabulary.band import Band
from resumeproof.verify.vocabulary.expectation import Expect, Expectation
from resumeproof.verify.vocabulary.findings import (
    AT_RESTORE,
    DIVERGENT,
    WITHIN_SPREAD,
    Check,
    Diagnosis,
    Fault,
)

Summaries = Mapping[str, Summary]
RESTORE_KEYS = (STEP, HISTORY, STATE, NEXT)
END_KEYS = (STEP, STATE, NEXT, EVAL)


def measured(trajectories: Sequence[Trajectory], summaries: Summaries) -> Band | None:
    """The spread of the continuous run, its repeats and the interrupted runs' first updates; None until every
    repeat has run."""
    if any(name not in summaries for name in REPEATS):
        return None
    references = {name: run_of(summaries[name]) for name in (CONTINUOUS, *REPEATS)}
    for t in trajectories:
        e = t.expectation
        if e is not None and e.kind is Expect.PREFIX and t.name in summaries:
            references[t.name] = run_of(summaries[t.name], end=False)
    return measure(references)


def run_of(summary: Summary, end: bool = True) -> Run:
    """A summary as the band reads it: its history by update, and its end state."""
    records = {i + 1: r for i, r in enumerate(summary.history) if isinstance(r, dict)}
    return Run(records, {key: summary.surface(key) for key in END_KEYS} if end else None)


@dataclass(frozen=True)
class Restored:
    """A resume of 0 updates held against what the run it resumed from saved."""

    check: Check
    caught_by: tuple[str, ...]  # the compared keys that differ (`state`, `next`, `history.rows`, ...)
    count: int

    @property
    def same(self) -> bool:
        return self.check.passed


def restored(t: Trajectory, summaries: Summaries, parts: tuple[str, ...], k: int) -> Restored | None:
    """The restore tier of one resume: its twin of 0 updates against the summary of the run it resumed from; None
    where it has none (the flat file's fault: verification.py makes a twin that did not complete an error)."""
    saved_by = t.after[0]
    twin, saved = summaries.get(protocol.restored_name(t.name)), summaries[saved_by]
    if twin is None:
        return None
    name = f"{t.name}: starts from what {saved_by} saved, bit for bit (a resume of 0 updates)"
    check_id = CheckId(kind=CheckKind.RESTORE, trajectory=t.name)
    found = merge(compare_keys(saved.surfaces, twin.surfaces, RESTORE_KEYS, 0.0).values())
    why = None if found.concordant else _at_restore(saved, twin, parts, k, f"{saved_by} saved at {found.first_path}")
    first = found.mismatches[0] if found.mismatches else None
    check = Check(
        id=check_id,
        name=name,
        passed=found.concordant,
        max_abs_diff=found.max_abs_diff,
        first_mismatch=first.path if first else None,
        detail=first.reason if first else None,
        diagnosis=why,
        resumed_at=k,
    )
    return Restored(check, tuple(sorted(found.caught_by)), found.count)


def _at_restore(saved: Summary, twin: Summary, parts: tuple[str, ...], k: int, where: str) -> Diagnosis:
    """The parts whose state differs at the restore. Nothing has run yet, so a difference cannot have spread from
    one part to another: each part whose reported state (or next draw) differs was not restored, and a step or a
    history that differs is the progress."""
    f = facts(replace(saved, eval=None), replace(twin, eval=None), Context(resumed_at=k, parts=parts, atol=0.0))
    assert f is not None, "called where the restore differs"
    progress = [PROGRESS] if STEP in f.differing or HISTORY in f.differing else []
    named = [part_for(name, parts) for name in (*progress, *f.state_keys)] + list(f.draws)
    lost = tuple(dict.fromkeys(p for p in named if p))
    unnamed = [key for key in f.state_keys if part_for(key, parts) is None]
    said = f"what a resume of 0 updates reports differs from what {where}"
    if unnamed:
        said += f"; state.{', state.'.join(unnamed)} names no declared part"
    if not lost:
        said += ": read the paths" if f.differing != {NEXT} else ": only `next` differs (the lr, a generator)"
    evidence = "; ".join(f.evidence[:3])
    return Diagnosis(lost=lost, rule=AT_RESTORE, step=k + 1, evidence=evidence, explanation=said)


EVERY_RUN = "every run of the command"  # the continuous run and its repeats, where they agree


def fed(t: Trajectory, a: Against, k: int) -> Check | None:
    """What the first resumed update is fed, held first against a second resume of the same checkpoint (anything
    that differs there is no function of the checkpoint: a mapping each process builds anew, an unsaved draw), then
    against update k+1 of every run of the command wherever they all agree on what no floating-point sum decides (a
    batch, a target, a generator, a counter: what the interrupted process would have been fed too; weights that
    runs round apart agree by chance at first); None where the records cannot tell."""
    seen = a.found.observed
    resumed, twin = seen.get(t.name) or {}, seen.get(protocol.fed_name(t.name)) or {}
    runs = [seen.get(name) or {} for name in (CONTINUOUS, *REPEATS)]
    ranks = set(resumed)
    if not ranks or any(set(records) != ranks for records in (twin, *runs)):
        return None
    if any(r.at(k + 1) is None for records in runs for r in records.values()) or any(
        r.at(1) is None for records in (twin, resumed) for r in records.values()
    ):
        return None
    continuous = runs[0]
    other = {rank: _replaced(continuous[rank], k + 1, _second(twin[rank], continuous[rank], k)) for rank in ranks}
    found = exact.restore(other, resumed, k, t.name, held_by=ANOTHER_RESUME, parts=a.parts)
    if found is None or not found.passed:
        return found
    held = {rank: _agreed([run[rank] for run in runs], resumed[rank], k) for rank in ranks}
    agreed = {rank: _replaced(continuous[rank], k + 1, update) for rank, update in held.items()}
    return exact.restore(agreed, resumed, k, t.name, held_by=EVERY_RUN, parts=a.parts)


def _second(twin: Observation, run: Observation, k: int) -> Recorded:
    """The second resume's first update, as evidence: the generators the run's update k+1 draws from (a process-wide
    one nothing draws from is seeded by the OS in each process), no module attributes (a clock or a process id kept
    on a module differs between any two processes; a counter is held against every run below)."""
    used = exact.drawn([run.at(k) or Recorded(), run.at(k + 1) or Recorded()])
    mine = twin.at(1) or Recorded()
    drawn = {
        m: replace(getattr(mine, m), generators=exact.only_drawn(getattr(mine, m).generators, used))
        for m in (START, AFTER)
    }
    forward = replace(mine.forward, generators=exact.only_drawn(mine.forward.generators, used), attributes=None)
    return replace(mine, forward=forward, **drawn)


def _replaced(seen: Observation, n: int, update: Recorded) -> Observation:
    """`seen` with its update `n` replaced."""
    return replace(seen, updates={**seen.updates, n: update})


def _agreed(runs: list[Observation], resumed: Observation, k: int) -> Recorded:
    """Update k+1 as every run recorded what no floating-point sum decides (its generators, batch, target, module
    attributes that are no float), entry by entry; where they do not all agree, the resumed run's own entry, which
    the second resume holds it to instead. Nothing else: weights and moments that runs round apart agree by chance
    in the first updates, and the restore of 0 updates holds them to what was saved."""
    held = [r.at(k + 1) or Recorded() for r in runs]
    mine = resumed.at(1) or Recorded()

    def agreed(moment: str, key: str, exact: bool = False) -> Any:
        return _agree([h.held(moment, key) for h in held], mine.held(moment, key), exact)

    forward = Forward(generators=agreed(FORWARD, GENERATORS), batch=agreed(FORWARD, BATCH))
    forward = replace(forward, attributes=agreed(FORWARD, ATTRIBUTES, exact=True))
    start, loss = Start(generators=agreed(START, GENERATORS)), Loss(target=agreed(LOSS, TARGET))
    return Recorded(start=start, forward=forward, loss=loss)


def _agree(values: list[Any], mine: Any, exact: bool = False) -> Any:
    """The runs' value where they all hold the same one, else `mine`; a map entry by entry. `exact`: a value that
    holds a float is `mine` too (a float attribute may be a loss the runs round alike by chance)."""
    if isinstance(mine, dict) and all(isinstance(v, dict) for v in values):
        keys = set(mine).union(*values)
        return {key: _agree([v.get(key) for v in values], mine.get(key), exact) for key in keys}
    same = values[0] is not None and all(v == values[0] for v in values)
    return values[0] if same and not (exact and _holds_float(values[0])) else mine


def _holds_float(value: Any) -> bool:
    if isinstance(value, list):
        return any(_holds_float(v) for v in value)
    return isinstance(value, float)


def _with_inputs(restore: Restored, inputs: Check | None) -> Restored:
    """The restore tier with what its first update is fed: failed where that differs, named by it."""
    if inputs is None:
        return restore
    if not inputs.passed:
        return Restored(replace(inputs, resumed_at=restore.check.resumed_at), ("inputs",), 1)
    name = f"{restore.check.name}, and its first update fed as {ANOTHER_RESUME} and {EVERY_RUN} are"
    return replace(restore, check=replace(restore.check, name=name, detail=inputs.detail))


def within_spread(t: Trajectory, e: Expectation, a: Against) -> Held:
    """A trainer that differs from itself: each run within its measured spread, each resume's restore bit for bit;
    the negative control and the faults must differ at their restore (the restore tier above)."""
    band, other = a.determinism.spread, a.summaries[t.name]
    assert band is not None
    parts_of, result = compared(a, other)
    outside = spread.outside(band, run_of(a.continuous), run_of(other, end=e.kind is not Expect.PREFIX))
    restore = restored(t, a.summaries, a.parts, e.resumed_at) if t.after else None
    if e.kind is Expect.CONCORDANT and restore is not None and restore.same:
        restore = _with_inputs(restore, fed(t, a, e.resumed_at))
    if e.kind in (Expect.PREFIX, Expect.CONCORDANT):
        name = e.name if e.kind is Expect.PREFIX else f"{t.name} (from step {e.resumed_at}) within the measured spread"
        check = outside_check(e.id, name, outside, restore.check if restore is not None else None)
        check = replace(check, resumed_at=e.resumed_at or None)
        if e.kind is Expect.PREFIX:
            return Held(check=check)
        resume = resume_entry(a.continuous, other, result, parts_of["state"], check.diagnosis, None)
        inside = outside is None  # the entry says what the check says: the first place outside the band
        resume = replace(
            resume,
            verdict=WITHIN_SPREAD if inside else DIVERGENT,
            mismatches=0 if inside else max(1, resume.mismatches),
            first_mismatch=check.first_mismatch,
        )
        return Held(check=check, restore=restore.check if restore is not None else None, resume=resume)
    # A run that must diverge: at its restore, else beyond the band (a part whose state at k equals a fresh start's,
    # such as a generator drawn only at an epoch's start, shows only once the run draws from it).
    at_restore = restore is not None and not restore.same
    differs = at_restore or outside is not None
    why = restore.check.diagnosis if at_restore and restore else outside_diagnosis(outside) if outside else None
    first = restore.check.first_mismatch if at_restore and restore else outside.path if outside else None
    check = Check(
        id=e.id,
        name=f"{e.name} (its restore, or its trajectory beyond the spread)",
        passed=differs,
        first_mismatch=first,
        diagnosis=why,
        resumed_at=e.resumed_at,
        first_update=None if at_restore or outside is None else outside.step,
    )
    if e.is_fault:
        caught = restore.caught_by if at_restore and restore else tuple(sorted(result.caught_by)) if differs else ()
        fault = Fault(
            detected=differs,
            cause=FLAT_CAUSE if e.part == FLAT else f"{e.part} not restored",
            caught_by=caught,
            first_mismatch=first,
            max_deviation=result.max_abs_diff,
            mismatches=(restore.count if at_restore and restore else max(1, result.count)) if differs else 0,
            diagnosis=why,
            identical_to_full_resume=identical(a.summaries[RESUMED], other),
        )
        return Held(check=check, fault=(e.part or "", fault))
    why = why if differs else NO_RANDOM_STATE
    negative = resume_entry(a.continuous, other, result, parts_of["state"], why, identical(a.summaries[RESUMED], other))
    verdict = DIVERGENT if differs else WITHIN_SPREAD
    return Held(check=replace(check, diagnosis=why), negative=replace(negative, verdict=verdict))
