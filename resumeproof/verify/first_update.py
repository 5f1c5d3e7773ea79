"""The first resumed update held against the continuous run's update k+1, bit for bit, as the observer recorded
them (common/observation.py), in the order the update consumes its inputs: the generators drawn before the
forward pass, the batch, the model, the generators drawn in it, the loss, the gradients, the GradScaler, the
optimizer's state, the LR schedulers, the param groups' hyper-parameters, the parameters after the step. The first
thing that differs is the diagnosis, with what was the same before it as its evidence.

A generator is evidence only where the continuous update draws from it: one that nothing draws from (an unseeded
global generator) differs between any two processes. A generator that differs is told apart as not restored, or
restored to the right state (the continuous run's after update k) and then drawn from before its first use.
"""

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from resumeproof.common import observation as o
from resumeproof.common.protocol import (
    DATA,
    MODEL,
    OPTIMIZER,
    OTHER_RANKS_DATA,
    OTHER_RANKS_RNG,
    SCALER,
    SCHEDULER,
    generator_of,
    rng_part,
)
from resumeproof.verify.diagnosis import part_for
from resumeproof.verify.findings import DIRECT, Diagnosis

RULE = DIRECT
CONTINUOUS_RUN = "the continuous run"
BEFORE_FORWARD = "drawn before the forward pass"
Observed = Mapping[int | None, o.Observation]  # one record per rank (None: a process without a launcher)


@dataclass(frozen=True)
class Update:
    """The continuous run around the resume point, and the resumed run's first update."""

    before: dict[str, Any]  # the continuous run's update k ({} when not recorded)
    then: dict[str, Any]  # its update k+1
    first: dict[str, Any]  # the resumed run's update 1
    restores: list[dict[str, Any]] = field(default_factory=list)  # the resumed run's generator restores
    unseen: tuple[str, ...] = ()  # declared generator parts the observer cannot see (a trainer's torch.Generator)
    rows_same: bool | None = None  # the history's rows of update k+1 agree (the summaries say it), None: unknown
    replayed: int | None = None  # the continuous update whose batch the first resumed update received instead
    reference: str = CONTINUOUS_RUN  # what the first update is held against, as the explanations name it

    def get(self, which: str, moment: str, key: str) -> Any:
        found = getattr(self, which).get(moment) or {}
        return found.get(key) if isinstance(found, dict) else None

    def pair(self, moment: str, key: str) -> tuple[Any, Any]:
        """(continuous, resumed) at one moment."""
        return self.get("then", moment, key), self.get("first", moment, key)


@dataclass(frozen=True)
class Found:
    said: str  # what differs and how, as a clause: "GradScaler scale 65536.0 vs 2097152.0"
    concept: str | tuple[str, ...] | None  # the part(s) it is state of, in the protocol's words; the trainer's names
    # are looked up
    why: str = ""  # what it means, where that says more


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
    if not continuous or set(continuous) != set(resumed):
        return None
    updates: dict[int | None, Update] = {}
    for rank in sorted(continuous, key=lambda r: -1 if r is None else r):
        then, first = continuous[rank].at(k + 1), resumed[rank].at(1)
        if then is None or first is None:
            return None
        before, restores = continuous[rank].at(k) or {}, resumed[rank].restores
        replayed = _replayed(continuous[rank], first, k)
        rows = rows_same if rows_same is not None or replayed is None else False  # another update's rows
        updates[rank] = Update(before, then, first, restores, _unseen(then, parts), rows, replayed, reference)
    same: list[str] = []
    for label, check in CHECKS if checks is None else checks:
        found = {rank: f for rank, update in updates.items() if (f := check(update)) is not None}
        if found:
            rank, finding = next(iter(found.items()))
            owner = _batch_owner(continuous, resumed, rank, k) if finding.concept == DATA else None
            others = rank is not None and 0 in updates and 0 not in found  # rank 0 resumed it right
            return _diagnosis(finding, same, rank, owner, k, _parts(parts, others))
        same += [label] if label else []
    return None


def _parts(parts: tuple[str, ...], others: bool) -> Callable[[str], str | None]:
    """The declared part a concept names: under torchrun, where only the other ranks than 0 differ, the
    rank-local part (`other-ranks.data`, `other-ranks.rng`) where the trainer declares it."""

    def named(concept: str) -> str | None:
        local = OTHER_RANKS_DATA if concept == DATA else OTHER_RANKS_RNG if generator_of(concept) else None
        return local if others and local in parts else part_for(concept, parts)

    return named


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


def _unseen(then: dict, parts: tuple[str, ...]) -> tuple[str, ...]:
    seen = {name for moment in then.values() for named in (moment.get(o.GENERATORS) or {}).values() for name in named}
    return tuple(p for p in parts if (name := generator_of(p)) is not None and name not in seen)


def _replayed(continuous: o.Observation, first: dict[str, Any], k: int) -> int | None:
    """The continuous update (other than k+1) whose batch the first resumed update received: where the histories
    say nothing of the rows, a batch the continuous run took at another update is the data position's evidence
    (an epoch started again, batches skipped), whatever else differs."""
    mine = (first.get(o.FORWARD) or {}).get(o.BATCH)
    then = ((continuous.at(k + 1) or {}).get(o.FORWARD) or {}).get(o.BATCH)
    if mine is None or mine == then:
        return None
    seen = (
        n for n, u in sorted(continuous.updates.items()) if n != k + 1 and (u.get(o.FORWARD) or {}).get(o.BATCH) == mine
    )
    return next(seen, None)


def _batch(u: Update) -> Found | None:
    """Another batch names the data position, unless a declared generator the observer cannot see may have drawn
    it (a DataLoader's own torch.Generator) and it is no batch the continuous run took: then the evidence cannot
    tell which."""
    found = _moment(o.FORWARD, o.BATCH, "the batch", DATA)(u)
    if found is not None and u.replayed is not None:
        return Found(f"the batch differs: it is {u.reference}'s batch of update {u.replayed}", DATA)
    if found is None or not u.unseen:
        return found
    return Found(found.said, None, f"the data position, or {', '.join(u.unseen)} (unseen by the observer), drew it")


def _loss(u: Update) -> Found | None:
    a, b = u.pair(o.LOSS, o.DIGEST)
    if a == b:
        return None
    values = f"{u.get('first', o.LOSS, o.VALUE)} vs {u.get('then', o.LOSS, o.VALUE)}"
    why = (
        "the same batch, model and generators give another loss: a generator the observer cannot see (a "
        "torch.Generator of the trainer's own) or state that acts in the forward pass was not restored"
    )
    return Found(f"the loss differs ({values})", None, why)


def _scaler(u: Update) -> Found | None:
    """A GradScaler: the scale the loss was multiplied by (there even where the step is skipped), and its state
    before the step (scale, growth tracker)."""
    for a, b in (u.pair(o.LOSS, o.SCALE), u.pair(o.STEP, o.SCALERS)):
        if a != b and a is not None and b is not None:  # a skipped step records no state before it
            return Found(f"GradScaler {_scaled(a, b)}", SCALER)
    return None


def _scaled(a: Any, b: Any) -> str:
    if isinstance(a, list) and isinstance(b, list) and a and b:
        pairs = [(key, b[0].get(key), a[0].get(key)) for key in a[0] if a[0].get(key) != b[0].get(key)]
        return ", ".join(f"{key} {new} vs {old}" for key, new, old in pairs) or "state differs"
    return f"scale {b} vs {a}"


def _groups(u: Update) -> Found | None:
    a, b = (value or [] for value in u.pair(o.STEP, o.GROUPS))
    if a == b:
        return None
    pairs = [(key, x.get(key), y.get(key)) for x, y in zip(a, b, strict=False) for key in x if x.get(key) != y.get(key)]
    said = ", ".join(f"{key} {new} vs {old}" for key, old, new in pairs[:2]) or "differ"
    why = "every LR scheduler's state is the same: the optimizer's param groups were rebuilt or overwritten"
    return Found(f"the optimizer's hyper-parameters: {said}", OPTIMIZER, why)


def _generators(moment: str, when: str) -> Callable[[Update], Found | None]:
    """Every generator that is evidence and differs at this moment: the first one's finding, naming each that
    differs the same way (a resume without its random state loses them all)."""

    def check(u: Update) -> Found | None:
        a, b = (value or {} for value in u.pair(moment, o.GENERATORS))
        used = _used(u)
        found = [
            _generator(u, group, name, when, b.get(group, {}).get(name))
            for group in (o.KIT, o.GLOBAL)
            for name in a.get(group, {})
            if (group, name) in used and a[group][name] != b.get(group, {}).get(name)
        ]
        if not found:
            return None
        first = found[0]
        alike = [g for g in found if (g.owner, g.what, g.part is None) == (first.owner, first.what, first.part is None)]
        names = ", ".join(g.name for g in alike)
        many = len(alike) > 1
        what = first.what.replace("was ", "were ", 1) if many else first.what
        said = f"{first.owner} {names} generator{'s' if many else ''}, {when}, {what}"
        parts = tuple(dict.fromkeys(g.part for g in alike if g.part))
        return Found(said, parts or None, first.why)

    return check


@dataclass(frozen=True)
class _Generator:
    """What one generator's state entering the first resumed update says."""

    owner: str  # "the process-wide" or "the trainer's"
    name: str
    what: str  # "was not restored", ...
    part: str | None  # the part it points to, in the protocol's words (an rng part, or the data position)
    why: str = ""


def _used(u: Update) -> set[tuple[str, str]]:
    """(group, name) of every generator that is evidence: each the trainer names through the kit (it saves and
    restores it), and each process-wide one the continuous update draws from (its state changes from the end of
    update k to the end of update k+1)."""
    seen: dict[tuple[str, str], set[str]] = {}
    moments = [u.before.get(o.AFTER), *(u.then.get(m) for m in (o.START, o.FORWARD, o.AFTER))]
    if o.AFTER not in u.then:  # an interrupted process's update k+1, ended before its step: update k's draws tell
        moments.insert(0, u.before.get(o.FORWARD))
    for moment in moments:
        for group, named in ((moment or {}).get(o.GENERATORS) or {}).items():
            for name, value in named.items():
                seen.setdefault((group, name), set()).add(value)
    return {key for key, values in seen.items() if len(values) > 1 or key[0] == o.KIT}


def _generator(u: Update, group: str, name: str, when: str, mine: str | None) -> _Generator:
    """A generator in another state than the continuous run's, entering the update: not restored; set to another
    state; restored and then drawn from before its first use; or in the right state and not drawn from as in the
    continuous update. The histories' rows tell the data position (other rows) from the generator's own use."""
    right = u.get("before", o.AFTER, o.GENERATORS) or u.get("then", o.START, o.GENERATORS) or {}
    expected = right.get(group, {}).get(name)
    restores = [r for r in u.restores if (r.get("group"), r.get("generator"), r.get("before")) == (group, name, 1)]
    owner = "the process-wide" if group == o.GLOBAL else "the trainer's"
    batch = u.pair(o.FORWARD, o.BATCH)
    position = None if u.unseen else DATA  # another position, unless an unseen generator could have drawn it
    if expected is not None and mine == expected:  # the right state, and the update's draws were not taken from it
        if u.rows_same is False:
            why = "what decides the draws (the data position: an epoch's start, a cursor) was not restored"
            return _Generator(owner, name, f"was not drawn from as in {u.reference}", position, why)
        if u.rows_same and batch[0] != batch[1]:
            why = "the batch's draws (augmentation) came before the restore: restore it before the first batch"
            return _Generator(owner, name, "was restored after the batch drew from it", rng_part(name), why)
        return _Generator(owner, name, f"was not drawn from as in {u.reference}", None)
    if expected is not None and restores and restores[-1].get("digest") == expected:
        if when == BEFORE_FORWARD and batch[0] != batch[1] and u.rows_same is not True:  # other rows, or unknown
            why = "the data pipeline started again elsewhere (an iterator rebuilt at another position drew from it)"
            if u.replayed is not None:
                why += f": the batch is {u.reference}'s of update {u.replayed}"
            what = "was drawn from between its restore and the update, and the batch differs"
            return _Generator(owner, name, what, position if u.rows_same is False else None, why)
        why = (
            "something drew from it between the restore and its first use (e.g. a DataLoader iterator created "
            "after the restore draws its base seed from it): restore it last, right before the loop"
        )
        return _Generator(owner, name, f"was restored to {u.reference}'s state, then drawn from", rng_part(name), why)
    what = f"was set to another state than {u.reference}'s (seeded or restored)" if restores else "was not restored"
    return _Generator(owner, name, what, rng_part(name))


def _batch_owner(continuous: Observed, resumed: Observed, rank: int | None, k: int) -> int | None:
    """Under torchrun: another rank whose batch at update k+1 this rank's first resumed update received."""
    mine = (resumed[rank].at(1) or {}).get(o.FORWARD, {}).get(o.BATCH) if rank is not None else None
    for other, seen in continuous.items():
        if other != rank and mine is not None and ((seen.at(k + 1) or {}).get(o.FORWARD) or {}).get(o.BATCH) == mine:
            return other
    return None


def _diagnosis(
    found: Found, same: list[str], rank: int | None, owner: int | None, k: int, named: Callable[[str], str | None]
) -> Diagnosis:
    concepts = (found.concept,) if isinstance(found.concept, str) else found.concept or ()
    parts = tuple(dict.fromkeys(p for p in (named(c) for c in concepts) if p))
    said = f"rank {rank} received rank {owner}'s batch" if owner is not None else found.said
    clauses = [f"same {label}" for label in same] + [said]
    explanation = (
        ("" if rank is None else f"rank {rank}: ") + ", ".join(clauses) + (f": {found.why}" if found.why else "")
    )
    evidence = f"observer records of update {k + 1} and the first resumed one"
    return Diagnosis(lost=parts, rule=RULE, step=k + 1, evidence=evidence, explanation=explanation)


_GRADIENTS = "the same loss gives other gradients: a gradient accumulated before the update was not restored"
_AFTER = "every input of the update is the same and the parameters after it differ"
Checks = list[tuple[str, Callable[[Update], Found | None]]]
CHECKS: Checks = [
    ("generators", _generators(o.FORWARD, BEFORE_FORWARD)),
    ("batch", _batch),
    ("model", _moment(o.FORWARD, o.MODEL, "the model entering the update:", MODEL)),
    ("", _generators(o.AFTER, "drawn in the forward or backward pass")),
    ("loss", _loss),
    ("GradScaler", _scaler),
    ("gradients", _moment(o.AFTER, o.GRADS, "the gradients", None, _GRADIENTS)),
    ("optimizer state", _moment(o.STEP, o.OPTIMIZER, "the optimizer's state", OPTIMIZER)),
    ("LR schedulers", _moment(o.STEP, o.SCHEDULERS, "an LR scheduler's state", SCHEDULER)),
    ("hyper-parameters", _groups),
    ("", _moment(o.AFTER, o.PARAMS, "the parameters after the step", None, _AFTER)),
]

# What an update consumes, in its order, and nothing it computes: the restore of a trainer that is not deterministic
# (its loss, gradients and parameters after the step differ from run to run whatever it restored).
INPUTS: Checks = [(label, check) for label, check in CHECKS if label in ("generators", "batch", "model")] + [
    (label, check)
    for label, check in CHECKS
    if label in ("GradScaler", "optimizer state", "LR schedulers", "hyper-parameters")
]
