"""The first resumed update held against the continuous run's update k+1, bit for bit, as the observer recorded
them (common/observation.py), in the order the update consumes its inputs: the generators drawn before the
forward pass, the batch, the model, the generators drawn in it, the loss, the gradients, the GradScaler, the
optimizer's state, the LR schedulers, the param groups' hyper-parameters, the parameters after the step. The first
thing that differs is the diagnosis, with what was the same before it as its evidence.

Which generator is evidence, and what its state says, is verify/judge/records/first_generators.py's.
"""

import dataclasses
import json
from collections.abc import Callable, Mapping
from typing import Any

from resumeproof.common import observation as o
from resumeproof.common.protocol import (
    CONTINUOUS,
    DATA,
    EMA,
    MODEL,
    OPTIMIZER,
    OTHER_RANKS_DATA,
    OTHER_RANKS_RNG,
    PROGRESS,
    REPEATS,
    SCALER,
    SCHEDULER,
    generator_of,
)
from resumeproof.verify.judge.parts import ALIASES, part_for
from resumeproof.verify.judge.records.first_generators import (
    ANOTHER_RESUME,
    BEFORE_FORWARD,
    CONTINUOUS_RUN,
    Found,
    Observed,
    Update,
    generators,
)
from resumeproof.verify.vocabulary.findings import DIRECT, SECOND, Diagnosis

RULE = DIRECT


def diagnose(
    continuous: Observed,
    resumed: Observed,
    k: int,
    parts: tuple[str, ...],
    rows_same: bool | None = None,
    checks: "Checks | None" = None,
    reference: str = CONTINUOUS_RUN,
) -> Diagnosis | None:
    """The first difference of the first resumed update, in causal order over every rank at once (a rank's other
    batch comes before the gradients every rank then shares); None where the records cannot tell (none, another
    number of ranks) or show the first resumed update the same as the continuous run's. `checks`: CHECKS or some."""
    updates = held_updates(continuous, resumed, k, parts, rows_same, reference)
    first = first_difference(updates, CHECKS if checks is None else checks) if updates is not None else None
    if updates is not None and first is not None:
        same, found = first
        rank, finding = next(iter(found.items()))
        owner = _batch_owner(continuous, resumed, rank, k) if finding.concept == DATA else None
        others = rank is not None and 0 in updates and 0 not in found  # rank 0 resumed it right
        found_in = (rank, owner, k, _blind(updates.values()))
        return _diagnosis(finding, same, found_in, _parts(parts, others))
    return _schedule_counter(continuous, resumed, k, parts) if checks is None and updates is not None else None


Updates = dict[int | None, Update]  # each rank's first resumed update, beside the continuous run's k+1


def held_updates(
    continuous: Observed,
    resumed: Observed,
    k: int,
    parts: tuple[str, ...],
    rows_same: bool | None = None,
    reference: str = CONTINUOUS_RUN,
) -> Updates | None:
    """Each rank's first resumed update beside the continuous run's update k+1; None where the records cannot tell
    (none, another number of ranks, an update not recorded)."""
    if not continuous or set(continuous) != set(resumed):
        return None
    updates: Updates = {}
    for rank in sorted(continuous, key=lambda r: -1 if r is None else r):
        then, first = continuous[rank].at(k + 1), resumed[rank].at(1)
        if then is None or first is None:
            return None
        before, restores = continuous[rank].at(k) or o.Recorded(), resumed[rank].restores
        replayed = _replayed(continuous[rank], first, k)
        rows = rows_same if rows_same is not None or replayed is None else False  # another update's rows
        unseen, changes = _unseen(then, parts), changing(continuous[rank])
        updates[rank] = Update(before, then, first, restores, unseen, rows, replayed, reference, changes)
    return updates


def first_difference(updates: Updates, checks: "Checks") -> tuple[list[str], dict[int | None, Found]] | None:
    """The first check, in the update's causal order, that finds a difference on some rank: what was the same
    before it (on every rank), and its finding on each rank it differs on; None where every check holds."""
    same: list[str] = []
    for label, check in checks:
        found = {rank: f for rank, update in updates.items() if (f := check(update)) is not None}
        if found:
            return same, found
        same += [label] if label and all(_HELD.get(label, _any)(u) for u in updates.values()) else []
    return None


# The state the observer records entering an update, by the part it is: equal in both runs, that part was restored.
_STATE_OF = (
    (o.FORWARD, o.MODEL, MODEL),
    (o.STEP, o.OPTIMIZER, OPTIMIZER),
    (o.STEP, o.SCHEDULERS, SCHEDULER),
    (o.STEP, o.SCALERS, SCALER),
    (o.STEP, o.AVERAGED, EMA),
)


def restored(continuous: Observed, resumed: Observed, k: int, parts: tuple[str, ...]) -> frozenset[str]:
    """The parts whose state entering the first resumed update equals update k+1's on every rank: restored, so no
    rule on the summaries may name them (an optimizer counter that restarts later is an effect, not the cause)."""
    if not continuous or set(continuous) != set(resumed):
        return frozenset()
    found = set()
    for moment, key, concept in _STATE_OF:
        pairs = [(_held(continuous[r].at(k + 1), moment, key), _held(resumed[r].at(1), moment, key)) for r in resumed]
        if all(a and a == b for a, b in pairs) and (name := own_part(concept, parts)):
            found.add(name)
    return frozenset(found)


def _held(update: o.Recorded | None, moment: str, key: str) -> Any:
    return update.held(moment, key) if update is not None else None


def _parts(parts: tuple[str, ...], others: bool) -> Callable[[str], str | None]:
    """The declared part a concept names: under torchrun, where only the other ranks than 0 differ, the
    rank-local part (`other-ranks.data`, `other-ranks.rng`) where the trainer declares it."""

    def named(concept: str) -> str | None:
        local = OTHER_RANKS_DATA if concept == DATA else OTHER_RANKS_RNG if generator_of(concept) else None
        return local if others and local in parts else own_part(concept, parts)

    return named


# The parts the observer recognises by their class (and the progress counter an lr alone shows), whatever the trainer
# calls them: named in the protocol's words where it declares no part of that kind (no meta.parts, or --observe).
RECOGNISED = frozenset((SCALER, EMA, OPTIMIZER, SCHEDULER, PROGRESS))


def own_part(concept: str, parts: tuple[str, ...]) -> str | None:
    """The declared part a concept names; else, for a part the observer saw by its class (a GradScaler, an averaged
    model, a generator, an optimizer, an LR scheduler), the protocol's own name, unless the trainer declares parts
    of that kind and none of them is the one (two EMAs: which one the evidence cannot tell), or declares parts whose
    kind no name tells (`warmup`, `cosine`: one of them may be the scheduler the records saw, under its own name)."""
    found = part_for(concept, parts)
    if found is not None or not (concept in RECOGNISED or generator_of(concept)):
        return found
    if any(part_for(p, (concept,)) == concept for p in parts) or any(_unknown_kind(p) for p in parts):
        return None
    return concept


def _unknown_kind(part: str) -> bool:
    """A declared part no name places: not a generator, not a protocol part, not an alias of one."""
    if generator_of(part) is not None or part in (OTHER_RANKS_DATA, OTHER_RANKS_RNG):
        return False
    return not any(part_for(part, (kind,)) == kind for kind in (*ALIASES, *RECOGNISED))


def _any(u: Update) -> bool:
    return True


# What only some trainers have: said to be the same only where the records hold it.
_HELD: dict[str, Callable[[Update], bool]] = {
    "module attributes": lambda u: bool(u.changing),
    "other modules": lambda u: bool(u.then.step.modules),
    "target": lambda u: u.then.loss.target is not None,
}


def changing(seen: o.Observation) -> frozenset[str]:
    """The module attributes training changes in one process: those whose value differs between two of its recorded
    updates. One that stays as it was built (a width, a flag set before training, a per-process constant such as a
    run id) is no state a resume must bring back, and no evidence."""
    values: dict[str, set[str]] = {}
    for update in seen.updates.values():
        for name, value in (update.forward.attributes or {}).items():
            values.setdefault(name, set()).add(json.dumps(value, sort_keys=True))
    return frozenset(name for name, kept in values.items() if len(kept) > 1)


def unrepeatable(runs: list[o.Observation]) -> frozenset[str]:
    """The module attributes two runs of one command hold otherwise at an update both recorded (a clock, a process
    id, a timer kept on a module): no state a resume could bring back, so never evidence of one."""
    seen: dict[tuple[int, str], set[str]] = {}
    common = set.intersection(*(set(run.updates) for run in runs)) if len(runs) > 1 else set()
    for run in runs:
        for n in common:
            for name, value in (run.updates[n].forward.attributes or {}).items():
                seen.setdefault((n, name), set()).add(json.dumps(value, sort_keys=True))
    return frozenset(name for (_, name), values in seen.items() if len(values) > 1)


def repeatable(records: Mapping[str, Observed]) -> dict[str, dict[int | None, o.Observation]]:
    """Every trajectory's records without the module attributes the continuous run and its repeats hold otherwise
    (unrepeatable), rank by rank."""
    references = [seen for name in (CONTINUOUS, *REPEATS) if (seen := records.get(name))]
    ranks = {rank for seen in references for rank in seen}
    noisy = frozenset(name for r in ranks for name in unrepeatable([s[r] for s in references if r in s]))
    return {name: without(seen, noisy) for name, seen in records.items()}


def without(records: Observed, names: frozenset[str]) -> dict[int | None, o.Observation]:
    """`records` with the module attributes `names` left out of every update."""
    if not names:
        return dict(records)

    def kept(update: o.Recorded) -> o.Recorded:
        held = update.forward.attributes
        if held is None:
            return update
        attributes = {name: value for name, value in held.items() if name not in names}
        return dataclasses.replace(update, forward=dataclasses.replace(update.forward, attributes=attributes))

    return {
        rank: dataclasses.replace(seen, updates={n: kept(u) for n, u in seen.updates.items()})
        for rank, seen in records.items()
    }


def _blind(updates: Any) -> str:
    """What the observer could not read in either run (a private key this torch lacks), as a clause of evidence."""
    found = sorted({name for u in updates for r in (u.then, u.first) for name in r.step.unseen or ()})
    return f"; unseen by the observer: {', '.join(found)}" if found else ""


def _moment(moment: str, key: str, what: str, concept: str | None, why: str = "") -> Callable[[Update], Found | None]:
    def check(u: Update) -> Found | None:
        a, b = u.pair(moment, key)
        return None if a == b else Found(f"{what} {_how(key, a, b)}", concept, why)

    return check


def _how(key: str, a: Any, b: Any) -> str:
    if isinstance(a, dict) and isinstance(b, dict):
        keys = [name for name in a if a.get(name) != b.get(name)] + [name for name in b if name not in a]
        return f"differ at {', '.join(keys[:3])}" if keys else "differ"
    return "differs"


def _unseen(then: o.Recorded, parts: tuple[str, ...]) -> tuple[str, ...]:
    seen = {name for states in then.generators for named in states.values() for name in named}
    return tuple(p for p in parts if (name := generator_of(p)) is not None and name not in seen)


def _replayed(continuous: o.Observation, first: o.Recorded, k: int) -> int | None:
    """The continuous update (other than k+1) whose batch the first resumed update received: where the histories
    say nothing of the rows, a batch the continuous run took at another update is the data position's evidence
    (an epoch started again, batches skipped), whatever else differs."""
    mine, then = first.forward.batch, _held(continuous.at(k + 1), o.FORWARD, o.BATCH)
    if mine is None or mine == then:
        return None
    return next((n for n, u in sorted(continuous.updates.items()) if n != k + 1 and u.forward.batch == mine), None)


# The batch of the update's first forward pass, fed otherwise or not: the evidence of `_batch` and of `_backwards`
_fed_batch = _moment(o.FORWARD, o.BATCH, "the batch", DATA)


def _batch(u: Update) -> Found | None:
    """Another batch names the data position, unless a declared generator the observer cannot see may have drawn
    it (a DataLoader's own torch.Generator) and it is no batch the continuous run took: then the evidence cannot
    tell which."""
    found = _fed_batch(u)
    if found is not None and u.reference == ANOTHER_RESUME:
        return Found(f"{found.said} from {ANOTHER_RESUME}'s", DATA, _PER_PROCESS)
    if found is not None and u.replayed == 1:
        return Found(f"the batch differs: it is {u.reference}'s batch of update 1", DATA, _REPLAY)
    if found is not None and u.replayed is not None:
        return Found(f"the batch differs: it is {u.reference}'s batch of update {u.replayed}", DATA)
    if found is None or not u.unseen:
        return found
    return Found(found.said, None, f"the data position, or {', '.join(u.unseen)} (unseen by the observer), drew it")


_PER_PROCESS = (
    "two processes resuming one checkpoint are fed different data: what orders or maps it (a vocabulary, a label "
    "map, a column order built anew in each process, from a set of strings or an unseeded generator) is not in the "
    "checkpoint, and the weights it holds are fed another encoding"
)
_REPLAY = (
    "the resumed run replays the run from its start (or, unshuffled, its epoch): its data position was re-seeded or "
    "rebuilt, not restored"
)


def _attributes(u: Update) -> Found | None:
    """A plain attribute of the model's modules that training changes (a counter, a switch, an annealed factor),
    named where it lives, with its value on both sides."""
    a, b = u.then.forward.attributes or {}, u.first.forward.attributes or {}
    differ = [name for name in sorted(u.changing) if a.get(name) != b.get(name)]
    if not differ:
        return None
    said = "; ".join(f"{n}: {_shown(a, n)} in {u.reference}, {_shown(b, n)} after the restore" for n in differ[:3])
    return Found(said, None, _ATTRIBUTE, owned=tuple(differ))


_ATTRIBUTE = (
    "a plain attribute of the model's modules, in no state_dict, was not restored (save it with the checkpoint, "
    "or hold it in a buffer)"
)


def _shown(values: dict[str, Any], name: str) -> str:
    return json.dumps(values[name]) if name in values else "nothing"


def _modules(u: Update) -> Found | None:
    """Another module the update calls (a teacher, an EMA kept by hand) entering it in another state: named by what
    the trainer calls it, or by the part it declares for it."""
    a, b = u.then.step.modules or {}, u.first.step.modules or {}
    for name in sorted(set(a) & set(b)):
        if a[name].get(o.STATE) != b[name].get(o.STATE):
            held = "the optimizer holds them" if a[name].get(o.OPTIMIZED) else "the optimizer does not hold them"
            said = f"{name}: its parameters {_how(o.STATE, a[name].get(o.STATE), b[name].get(o.STATE))}, {held}"
            why = "a module the update calls beside the model (a teacher, an EMA kept by hand) was not restored"
            return Found(said, name, why, owned=(name,))
    return None


def _schedule_counter(continuous: Observed, resumed: Observed, k: int, parts: tuple[str, ...]) -> Diagnosis | None:
    """The first resumed update the same in everything, and the second's first difference its lr, while every LR
    scheduler's state and the optimizer's are the same: the schedule computes its lr from a counter outside its
    state (a global step, an example count) that was not restored. The restored param groups carried the right lr
    into the first update; the schedule's next step computed the wrong one."""
    for rank in sorted(resumed, key=lambda r: -1 if r is None else r):
        seen = continuous.get(rank)
        then, second = (seen.at(k + 2), resumed[rank].at(2)) if seen is not None else (None, None)
        if seen is None or then is None or second is None:
            return None
        u = Update(seen.at(k + 1) or o.Recorded(), then, second, changing=changing(seen))
        label, found = next(((label, f) for label, check in CHECKS if (f := check(u)) is not None), ("", None))
        if found is None:
            continue
        if label != "hyper-parameters" or found.concept != SCHEDULER:
            return None
        explanation = (
            f"update {k + 1} the same in every input and output, update {k + 2} the same up to its step, with the "
            f"same optimizer state and LR schedulers' state; {found.said}: the schedule computes its lr from a "
            "counter outside its state (a global step, an example count) that was not restored"
        )
        evidence = f"observer records of updates {k + 1}, {k + 2} and the first two resumed ones"
        lost = tuple(p for p in (own_part(PROGRESS, parts),) if p)
        return Diagnosis(lost=lost, rule=SECOND, step=k + 2, evidence=evidence, explanation=explanation)
    return None


def _loss(u: Update) -> Found | None:
    a, b = u.then.loss.digest, u.first.loss.digest
    if a == b:
        return None
    values = f"{u.first.loss.value} vs {u.then.loss.value}"
    why = (
        "the same parameters, batch and generators give another loss: state outside the state_dict (a Python "
        "attribute, a non-persistent buffer) or a generator the observer cannot see (a torch.Generator of the "
        "trainer's own) was not restored"
    )
    return Found(f"the loss differs ({values})", None, why)


def _backwards(u: Update) -> Found | None:
    """Another number of backward passes in the update, fed the same first batch: its micro-batches counted from a
    counter that restarted (a gradient-accumulation index), whatever the first micro-batch's loss and generators say.
    Fed another batch as well, the data position is the evidence (`_batch`)."""
    a, b = u.then.step.backwards, u.first.step.backwards
    if a is None or b is None or a == b or _fed_batch(u) is not None:
        return None  # another batch too: a script that counts its micro-steps from the data position moved both
    why = "the gradient-accumulation counter (micro-steps per update) was not restored"
    return Found(f"{b} backward passes in the update vs {a}", PROGRESS, why)


def _scaler(u: Update) -> Found | None:
    """A GradScaler: the scale the loss was multiplied by (there even where the step is skipped), and its state
    before the step (scale, growth tracker)."""
    for a, b in ((u.then.loss.scale, u.first.loss.scale), (u.then.step.scalers, u.first.step.scalers)):
        if a != b and a is not None and b is not None:  # a skipped step records no state before it
            return Found(f"GradScaler {_scaled(a, b)}", SCALER)
    return None


def _scaled(a: Any, b: Any) -> str:
    if isinstance(a, list) and isinstance(b, list) and a and b:
        pairs = [(key, b[0].get(key), a[0].get(key)) for key in a[0] if a[0].get(key) != b[0].get(key)]
        return ", ".join(f"{key} {new} vs {old}" for key, new, old in pairs) or "state differs"
    return f"scale {b} vs {a}"


def _groups(u: Update) -> Found | None:
    """The param groups' hyper-parameters, where the optimizer's per-parameter state and every LR scheduler's are
    the same (checked before): `Optimizer.load_state_dict` restores state and groups together, so an optimizer whose
    state came back had its groups back too, and another lr is the schedule's (a scheduler made or stepped after the
    load) or, with no scheduler, the counter the trainer computes it from. An optimizer with no state (SGD without
    momentum) cannot show it was restored: then the evidence names nothing."""
    a, b = u.then.step.groups or [], u.first.step.groups or []
    if a == b:
        return None
    pairs = [(key, x.get(key), y.get(key)) for x, y in zip(a, b, strict=False) for key in x if x.get(key) != y.get(key)]
    how = ", ".join(f"{key} {new} vs {old}" for key, old, new in pairs[:2]) or "differ"
    said = f"the optimizer's hyper-parameters: {how}"
    if not _holds_state(u.then.step.optimizer):
        return Found(said, None, "the optimizer holds no state: its param groups, or the schedule, were not restored")
    if u.then.step.schedulers or u.first.step.schedulers:
        return Found(said, SCHEDULER, "the optimizer's state and every LR scheduler's are the same: " + _SCHEDULE)
    return Found(said, PROGRESS, "the optimizer's state is the same and there is no LR scheduler: " + _COUNTER)


_SCHEDULE = "the schedule was applied otherwise (a scheduler made or stepped after the optimizer's load)"
_COUNTER = "the learning rate is recomputed from a counter that restarted"


def _holds_state(state: Any) -> bool:
    """Whether the observer's record of the optimizer's per-parameter state holds any (a digest, or a map of them)."""
    if isinstance(state, dict):
        return any(_holds_state(value) for value in state.values())
    if isinstance(state, list):
        return any(_holds_state(value) for value in state)
    return bool(state)


def _batch_owner(continuous: Observed, resumed: Observed, rank: int | None, k: int) -> int | None:
    """Under torchrun: another rank whose batch at update k+1 this rank's first resumed update received."""
    mine = _held(resumed[rank].at(1), o.FORWARD, o.BATCH) if rank is not None else None
    for other, seen in continuous.items():
        if other != rank and mine is not None and _held(seen.at(k + 1), o.FORWARD, o.BATCH) == mine:
            return other
    return None


def _diagnosis(
    found: Found, same: list[str], where: tuple[int | None, int | None, int, str], named: Callable[[str], str | None]
) -> Diagnosis:
    """`where`: the rank, the rank whose batch it received, k, and what the observer could not see (_blind)."""
    rank, owner, k, blind = where
    concepts = (found.concept,) if isinstance(found.concept, str) else found.concept or ()
    parts = tuple(dict.fromkeys(p for p in (named(c) for c in concepts) if p)) or found.owned
    said = f"rank {rank} received rank {owner}'s batch" if owner is not None else found.said
    clauses = [f"same {label}" for label in same] + [said]
    explanation = (
        ("" if rank is None else f"rank {rank}: ") + ", ".join(clauses) + (f": {found.why}" if found.why else "")
    )
    evidence = f"observer records of update {k + 1} and the first resumed one"
    return Diagnosis(lost=parts, rule=RULE, step=k + 1, evidence=evidence, explanation=explanation + blind)


def _target(u: Update) -> Found | None:
    """The loss function's target: the labels, or what the output is held to, which no forward pass takes."""
    found = _moment(o.LOSS, o.TARGET, "the loss function's target", DATA, _TARGET)(u)
    if found is not None and u.reference == ANOTHER_RESUME:
        return Found(f"{found.said} from {ANOTHER_RESUME}'s", DATA, _PER_PROCESS)
    return found


_TARGET = (
    "the data the loss holds the output to (labels, targets) is another: the data order, or what maps it (a label "
    "map built anew in each process), was not restored"
)
_GRADIENTS = "the same loss gives other gradients: a gradient accumulated before the update was not restored"
_AFTER = "every input of the update is the same and the parameters after it differ"
Checks = list[tuple[str, Callable[[Update], Found | None]]]
CHECKS: Checks = [
    ("", _backwards),  # recorded at the step, but a count the whole update follows: first
    ("generators", generators(o.FORWARD, BEFORE_FORWARD)),
    ("batch", _batch),
    ("model", _moment(o.FORWARD, o.MODEL, "the model entering the update:", MODEL)),
    ("module attributes", _attributes),
    ("other modules", _modules),
    ("target", _target),
    ("", generators(o.AFTER, "drawn in the forward or backward pass")),
    ("loss", _loss),
    ("GradScaler", _scaler),
    ("gradients", _moment(o.AFTER, o.GRADS, "the gradients", None, _GRADIENTS)),
    ("optimizer state", _moment(o.STEP, o.OPTIMIZER, "the optimizer's state", OPTIMIZER)),
    ("LR schedulers", _moment(o.STEP, o.SCHEDULERS, "an LR scheduler's state", SCHEDULER)),
    ("hyper-parameters", _groups),
    ("averaged models", _moment(o.STEP, o.AVERAGED, "an averaged model's state (an EMA, SWA)", EMA)),
    ("", _moment(o.AFTER, o.PARAMS, "the parameters after the step", None, _AFTER)),
]

# What an update consumes, in its order, and nothing it computes: the restore of a trainer that is not deterministic.
FED = ("generators", "batch", "model", "module attributes", "other modules", "target", "GradScaler")
INPUTS: Checks = [(label, check) for label, check in CHECKS if label in FED]
INPUTS += [
    (label, check)
    for label, check in CHECKS
    if label in ("optimizer state", "LR schedulers", "hyper-parameters", "averaged models")
]
