"""What the first resumed update's generators say, and the records it is read from (judge/records/first_update.py).

A generator is evidence only where the continuous update draws from it: one that nothing draws from (an unseeded
global generator) differs between any two processes. A generator that differs is told apart as not restored, or
restored to the right state (the continuous run's after update k) and then drawn from before its first use.
"""

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from resumeproof.common import observation as o
from resumeproof.common.protocol import DATA, rng_part

CONTINUOUS_RUN = "the continuous run"
ANOTHER_RESUME = "another resume of the same checkpoint"  # a second process restoring it, ended before its first step
BEFORE_FORWARD = "drawn before the forward pass"
Observed = Mapping[int | None, o.Observation]  # one record per rank (None: a process without a launcher)


@dataclass(frozen=True)
class Update:
    """The continuous run around the resume point, and the resumed run's first update."""

    before: o.Recorded  # the continuous run's update k (nothing where not recorded)
    then: o.Recorded  # its update k+1
    first: o.Recorded  # the resumed run's update 1
    restores: list[o.Restore] = field(default_factory=list)  # the resumed run's generator restores
    unseen: tuple[str, ...] = ()  # declared generator parts the observer cannot see (a trainer's torch.Generator)
    rows_same: bool | None = None  # the history's rows of update k+1 agree (the summaries say it), None: unknown
    replayed: int | None = None  # the continuous update whose batch the first resumed update received instead
    reference: str = CONTINUOUS_RUN  # what the first update is held against, as the explanations name it
    changing: frozenset[str] = frozenset()  # module attributes training changes (first_update.changing): evidence

    def pair(self, moment: str, key: str) -> tuple[Any, Any]:
        """(continuous, resumed) at one moment."""
        return self.then.held(moment, key), self.first.held(moment, key)


@dataclass(frozen=True)
class Found:
    said: str  # what differs and how, as a clause: "GradScaler scale 65536.0 vs 2097152.0"
    concept: str | tuple[str, ...] | None  # the part(s) it is state of, in the protocol's words; the trainer's names
    # are looked up
    why: str = ""  # what it means, where that says more
    owned: tuple[str, ...] = ()  # state named where it lives, no part of the protocol's (`model.gate.calls`)


def generators(moment: str, when: str) -> Callable[[Update], Found | None]:
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
    states = [u.before.after.generators, u.then.start.generators, u.then.forward.generators, u.then.after.generators]
    if u.then.after == o.After():  # an interrupted update k+1, ended before its step: update k's draws tell
        states.insert(0, u.before.forward.generators)
    for state in states:
        for group, named in (state or {}).items():
            for name, value in named.items():
                seen.setdefault((group, name), set()).add(value)
    return {key for key, values in seen.items() if len(values) > 1 or key[0] == o.KIT}


def _generator(u: Update, group: str, name: str, when: str, mine: str | None) -> _Generator:
    """A generator in another state than the continuous run's, entering the update: not restored; set to another
    state; restored and then drawn from before its first use; or in the right state and not drawn from as in the
    continuous update. The histories' rows tell the data position (other rows) from the generator's own use."""
    right = u.before.after.generators or u.then.start.generators or {}
    expected = right.get(group, {}).get(name)
    restores = [r for r in u.restores if (r.group, r.generator, r.before) == (group, name, 1)]
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
    if expected is not None and restores and restores[-1].digest == expected:
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
