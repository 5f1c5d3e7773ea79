"""Judge an unmodified trainer (`verify --observe`) from the observer's records, bit for bit (digests of the
exact bytes), and build the same `Verification` every report renders.

Determinism first: the continuous run against its repeat, every update. Then, for each interruption point k:
the restore (the resumed run's first update against the inputs the interrupted process was about to use for its
update k+1: generators, batch, model, optimizer, schedulers, GradScalers; this holds for a trainer that is not
deterministic too), and the resume (every update after k against the continuous run's: loss, optimizer state,
parameters), which a trainer that differs from itself does not get: it is reported as not comparable. The
negative control and each fault must diverge; where one cannot, the records say why.
"""

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

from resumeproof.common import observation as o
from resumeproof.common import protocol
from resumeproof.common.protocol import FAULT_PREFIX, REPEAT, RESUMED_NO_RNG, CheckId, CheckKind
from resumeproof.verify.judge.records import applies, first_update
from resumeproof.verify.vocabulary.findings import (
    CONCORDANT,
    COUNTED,
    DIVERGENT,
    Check,
    Determinism,
    Diagnosis,
    Fault,
    Resume,
)

Observed = Mapping[int | None, o.Observation]
COMPARED = ((o.LOSS, o.DIGEST), (o.STEP, o.OPTIMIZER), (o.AFTER, o.PARAMS))  # an update's outcome
RESTORE_INPUTS = (  # what an update consumes, as the interrupted process held it just before its step
    (o.FORWARD, o.GENERATORS),
    (o.FORWARD, o.BATCH),
    (o.FORWARD, o.MODEL),
    (o.FORWARD, o.ATTRIBUTES),
    (o.STEP, o.MODULES),
    (o.LOSS, o.TARGET),
    (o.STEP, o.OPTIMIZER),
    (o.STEP, o.GROUPS),
    (o.STEP, o.SCHEDULERS),
    (o.STEP, o.SCALERS),
    (o.STEP, o.AVERAGED),
)
# The parts a diagnosis names, in the protocol's words; CUDA's generator where the records hold it (the observer
# records it once CUDA is initialized: elsewhere it is not unseen, it does not exist). An averaged model is named
# `ema` by its class (first_update.RECOGNISED); a module the script keeps by hand, by the script's own name for it
# (`teacher`), which no part here claims.
PARTS = (*protocol.standard_parts(("python", "numpy", "torch")), protocol.SCALER)
CUDA = "cuda"
LABELS = {(o.LOSS, o.DIGEST): "loss", (o.STEP, o.OPTIMIZER): "optimizer state", (o.AFTER, o.PARAMS): "parameters"}
LABELS |= {(o.STEP, o.AVERAGED): "averaged models", (o.FORWARD, o.ATTRIBUTES): "module attributes"}
LABELS |= {(o.STEP, o.MODULES): "other modules", (o.LOSS, o.TARGET): "target"}


class Compared:
    """Where one run's updates first differ from the continuous run's, from update k+1 on: bit for bit, or within
    `atol` (the loss by its recorded value, the state by the values the observer kept: observation.VALUED)."""

    def __init__(
        self, continuous: Observed, other: Observed, k: int, fields: tuple[tuple[str, str], ...], atol: float = 0.0
    ) -> None:
        self.first: str | None = None
        self.first_step: int | None = None
        self.mismatches, self.loss_deviation, self.compared, self.atol = 0, 0.0, 0, atol
        self.state_deviation: float | None = 0.0  # the largest the values show; None where a state differed unseen
        self.differing: set[tuple[str, str]] = set()  # the fields that differ at some update
        self.counted: tuple[int, int] | None = None  # (updates it ran, updates that were left) where they differ
        for rank, mine in continuous.items():
            theirs = other.get(rank)
            for n in sorted(u for u in mine.updates if u > k):
                a, b = mine.at(n) or o.Recorded(), (theirs.at(n - k) if theirs else None) or o.Recorded()
                self.compared += 1
                for moment, key in fields:
                    if a.held(moment, key) == b.held(moment, key):
                        continue
                    if self._within(_gap(mine, theirs, (n, n - k), (moment, key), (a, b)), (moment, key)):
                        continue
                    self.mismatches += 1
                    self.differing.add((moment, key))
                    if self.first_step is None or n < self.first_step:
                        self.first_step, self.first = n, f"update {n}{_rank(rank)}: {_label(moment, key)}"
                self.loss_deviation = max(self.loss_deviation, _loss_gap(a, b))
            left = None if mine.completed is None else mine.completed - k
            ran = theirs.completed if theirs is not None else None
            if left is not None and ran is not None and ran != left:  # its step count was not where it stopped
                self.mismatches += 1
                self.first = self.first or f"updates{_rank(rank)}: ran {ran} where {left} were left"
                self.counted = self.counted or (ran, left)

    def _within(self, gap: float | None, field: tuple[str, str]) -> bool:
        """Whether a field whose digests differ is equal within the tolerance; a state's gap counts either way."""
        if field != (o.LOSS, o.DIGEST) and self.state_deviation is not None:
            self.state_deviation = None if gap is None else max(self.state_deviation, gap)
        return self.atol > 0 and gap is not None and gap <= self.atol

    @property
    def same(self) -> bool:
        return self.first is None


def determinism(continuous: Observed, repeat: Observed, atol: float = 0.0) -> tuple[Determinism, Check]:
    found = Compared(continuous, repeat, 0, ((o.FORWARD, o.BATCH), *COMPARED), atol)
    det = Determinism(
        repeated=True,
        deterministic=found.same,
        first_step=found.first_step,
        first_mismatch=found.first,
        detail=None if found.same else f"the continuous run and its repeat differ first at {found.first}",
    )
    name = "the continuous run repeats itself " + ("exactly" if atol == 0 else f"within atol {atol:g}")
    check = Check(
        id=CheckId(kind=CheckKind.DETERMINISM, trajectory=REPEAT),
        name=name,
        passed=found.same,
        detail=det.detail,
        first_mismatch=found.first,
        first_update=found.first_step,
    )
    return det, check


def restore(
    interrupted: Observed,
    resumed: Observed,
    k: int,
    name: str,
    continuous: Observed | None = None,
    held_by: str = "the interrupted process",
    parts: tuple[str, ...] | None = None,
) -> Check | None:
    """The resumed run's first update against what the interrupted process held for its update k+1; None where
    that was not recorded (a run stopped by SIGTERM takes its update k+1 or not, as its handler decides). A global
    generator counts only where the interrupted process drew from it: one nothing draws from differs between any
    two processes. The diagnosis reads the continuous run's whole update k+1 where the run is deterministic (what
    the update draws shows only once it ran), else the interrupted process's inputs."""
    held = {rank: seen.at(k + 1) for rank, seen in interrupted.items()}
    if not held or any(h is None for h in held.values()):
        return None
    fields = tuple(
        (m, key) for m, key in RESTORE_INPUTS if any(h and h.held(m, key) is not None for h in held.values())
    )
    differs = []
    for rank, h in held.items():
        theirs = resumed.get(rank)
        mine = (theirs.at(1) if theirs is not None else None) or o.Recorded()
        used = drawn([interrupted[rank].at(k) or o.Recorded(), h or o.Recorded()])
        changing = first_update.changing(interrupted[rank])
        for m, key in fields:
            a, b = (h or o.Recorded()).held(m, key), mine.held(m, key)
            if key == o.GENERATORS:
                a, b = only_drawn(a, used), only_drawn(b, used)
            if key == o.ATTRIBUTES:  # only what training changes is state: a width, a run id is not
                a, b = ({n: v for n, v in (x or {}).items() if n in changing} for x in (a, b))
            if a != b:
                differs.append(f"{_label(m, key)}{_rank(rank)}")
    trimmed = {rank: _only(seen, 1, held[rank] or o.Recorded()) for rank, seen in resumed.items()}
    if not differs:
        why = None
    elif continuous is not None:
        why = first_update.diagnose(continuous, resumed, k, parts or parts_of(continuous))
    else:  # not the continuous run: what the process the resume stands for held before its update k+1
        named = parts or parts_of(interrupted)
        why = first_update.diagnose(interrupted, trimmed, k, named, None, first_update.INPUTS, held_by)
    what = ", ".join(_label(m, key) for m, key in fields)
    return Check(
        id=CheckId(kind=CheckKind.RESTORE, trajectory=name),
        name=f"{name}: its first update starts from what {held_by} held for update {k + 1}",
        passed=not differs,
        first_mismatch=differs[0] if differs else None,
        detail=f"compared: {what}" + (f"; differ: {', '.join(differs)}" if differs else ""),
        diagnosis=why,
        resumed_at=k,
    )


def drawn(updates: list[o.Recorded]) -> set[tuple[str, str]]:
    """(group, name) of each generator whose state changes across these records' moments, or that the trainer
    names through the kit."""
    seen: dict[tuple[str, str], set[str]] = {}
    for update in updates:
        for states in update.generators:
            for group, named in states.items():
                for gen, value in named.items():
                    seen.setdefault((group, gen), set()).add(value)
    return {key for key, values in seen.items() if len(values) > 1 or key[0] == o.KIT}


def only_drawn(generators: Any, drawn: set[tuple[str, str]]) -> Any:
    if not isinstance(generators, dict):
        return generators
    return {g: {n: v for n, v in named.items() if (g, n) in drawn} for g, named in generators.items()}


def resume(continuous: Observed, resumed: Observed, k: int, name: str, atol: float = 0.0) -> tuple[Resume, Check]:
    found = Compared(continuous, resumed, k, COMPARED, atol)
    why = None if found.same else first_update.diagnose(continuous, resumed, k, parts_of(continuous))
    if found.counted is not None and (why is None or not why.lost):
        ran, left = found.counted
        if found.first_step is None or found.first_step > k + ran:  # only the updates it never made differ
            why = _counted(k, ran, left)
    entry = _entry(found, why)
    check = Check(
        id=CheckId(kind=CheckKind.RESUME, trajectory=name),
        name=f"{name} (from update {k}) equals the continuous run " + _how(atol),
        passed=found.same,
        max_abs_diff=found.loss_deviation,
        first_mismatch=found.first,
        diagnosis=why,
        resumed_at=k,
        first_update=found.first_step,
    )
    return entry, check


def _counted(k: int, ran: int, left: int) -> Diagnosis:
    """A resume whose every update is the continuous run's, but which made another number of them than were left:
    the count its run length reads (its step counter) was not restored with the rest, so it stops elsewhere."""
    how = f"{abs(ran - left)} {'behind' if ran > left else 'ahead of'} its state"
    return Diagnosis(
        lost=(protocol.PROGRESS,),
        rule=COUNTED,
        step=k + min(ran, left) + 1,
        evidence=f"updates: ran {ran} where {left} were left",
        explanation=(
            f"every update it made equals the continuous run's, but it made {ran} where {left} were left after update "
            f"{k}: its count of updates done came back {how}, so its run ends elsewhere"
        ),
    )


def negative(
    continuous: Observed, control: Observed, full: Observed, k: int, atol: float = 0.0
) -> tuple[Resume, Check]:
    """The resume with the generators' setters blocked must diverge. Where it blocked nothing it is not applicable
    (judge/records/applies.py); where it blocked them and nothing after update k draws from them, it is without
    power. Either way no lost generator could show, so none is blamed."""
    reason = applies.control_reason(control)
    if reason is not None:
        return applies.control(k, reason)
    found = Compared(continuous, control, k, COMPARED, atol)
    blocked = applies.blocked(control)
    why = first_update.diagnose(continuous, control, k, parts_of(continuous)) if not found.same else None
    entry = _entry(found, why, identical=Compared(full, control, 0, COMPARED, atol).same if full else None)
    name = "a resume with the generators' setters blocked diverges (negative control)"
    if found.same:
        name = f"negative control without power: it blocked {', '.join(blocked)}, and nothing after update {k} draws"
    check = Check(
        id=CheckId(kind=CheckKind.NEGATIVE_CONTROL, trajectory=RESUMED_NO_RNG),
        name=name,
        passed=True,
        first_mismatch=found.first,
        detail=f"blocked: {', '.join(blocked)}",
        diagnosis=why,
        resumed_at=k,
        first_update=found.first_step,
    )
    return entry, check


def fault(
    continuous: Observed, faulty: Observed, full: Observed, k: int, part: str, atol: float = 0.0
) -> tuple[Fault, Check]:
    reason = applies.fault_reason(part, faulty)
    if reason is not None:  # it blocked nothing: what its run did, the script's own resume did
        return applies.fault(part, k, reason)
    found = Compared(continuous, faulty, k, COMPARED, atol)
    why = first_update.diagnose(continuous, faulty, k, parts_of(continuous)) if not found.same else None
    cause = f"{part}'s load_state_dict made a no-op"
    entry = Fault(
        detected=not found.same,
        cause=cause,
        caught_by=tuple(_label(m, key) for m, key in COMPARED if (m, key) in found.differing),
        first_mismatch=found.first,
        max_deviation=found.loss_deviation,
        mismatches=found.mismatches,
        diagnosis=why,
        identical_to_full_resume=Compared(full, faulty, 0, COMPARED, atol).same if full else False,
    )
    check = Check(
        id=CheckId(kind=CheckKind.FAULT, trajectory=f"{FAULT_PREFIX}{part}", part=part),
        name=f"resume without {part} diverges",
        passed=not found.same,
        first_mismatch=found.first,
        detail=cause,
        diagnosis=why,
        resumed_at=k,
        first_update=found.first_step,
    )
    return entry, check


def _entry(found: Compared, why: Diagnosis | None, identical: bool | None = None) -> Resume:
    # Bit for bit the records hold digests, not values: a state that differs differs by an unknown amount (None);
    # the loss is recorded by value, and under a tolerance the state too.
    return Resume(
        verdict=CONCORDANT if found.same else DIVERGENT,
        max_state_deviation=found.state_deviation if found.same or found.atol > 0 else None,
        max_deviation=found.loss_deviation,
        final_mse=None,
        mse_deviation=None,
        mismatches=found.mismatches,
        first_mismatch=found.first,
        diagnosis=why,
        identical_to_full_resume=identical,
    )


def _only(seen: o.Observation, update: int, like: o.Recorded) -> o.Observation:
    """`seen` with `update` cut to the moments and keys `like` holds (an update the interrupted process never
    finished: no gradients, no parameters after it)."""
    mine = seen.at(update) or o.Recorded()
    moments: dict[str, Any] = {m: _like(getattr(mine, m), getattr(like, m)) for m in o.MOMENTS}
    return o.Observation(seen.rank, {**seen.updates, update: dataclasses.replace(mine, **moments)}, seen.restores)


def _like(mine: o.Moment, like: o.Moment) -> o.Moment:
    """`mine` with only the keys `like` holds."""
    unheld = {f.name: None for f in dataclasses.fields(like) if getattr(like, f.name) is None}
    return dataclasses.replace(mine, **unheld)


def parts_of(records: Observed) -> tuple[str, ...]:
    updates = [u for seen in records.values() for u in seen.updates.values()]
    cuda = any(CUDA in states.get(o.GLOBAL, {}) for u in updates for states in u.generators)
    return (*PARTS, protocol.rng_part(CUDA)) if cuda else PARTS


def _how(atol: float) -> str:
    return "bit for bit" if atol == 0 else f"within atol {atol:g}"


def _label(moment: str, key: str) -> str:
    return LABELS.get((moment, key), key)


def _rank(rank: int | None) -> str:
    return "" if rank is None else f" (rank {rank})"


def _gap(
    mine: o.Observation, theirs: o.Observation | None, updates: tuple[int, int], field: tuple[str, str], at: tuple
) -> float | None:
    """How far apart one field of two updates is: the loss by its recorded value, a state by the values the
    observer kept (None where it kept none: bit for bit, the digests are all there is)."""
    if field == (o.LOSS, o.DIGEST):
        return _loss_gap(*at)
    x = mine.values(updates[0], *field)
    y = theirs.values(updates[1], *field) if theirs is not None else None
    if x is None or y is None:
        return None
    if len(x) != len(y):
        return math.inf
    gap = 0.0
    for p, q in zip(x, y, strict=True):
        if p != q:  # equal infinities match; NaN never does
            d = abs(p - q)
            gap = max(gap, d if d == d else math.inf)
    return gap


def _loss_gap(a: o.Recorded, b: o.Recorded) -> float:
    x, y = a.loss.value, b.loss.value
    if isinstance(x, int | float) and isinstance(y, int | float):
        return abs(x - y) if math.isfinite(x - y) else math.inf
    return 0.0 if x == y else math.inf
