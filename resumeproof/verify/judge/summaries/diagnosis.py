"""Name the state a resume lost only where the evidence points to it; otherwise say "unknown" and show the evidence.

Determinism comes first (verify/judge/summaries/evidence.py): a run that differs from itself is never diagnosed
here. The rules read the summaries and follow cause before effect: at the first update where the
runs differ, which fields of its record differ; then the counters of `state` that restarted; the
generators whose next draw differs (under any key of `next`); the keys of `state` that differ when
the history does not. A name found in the evidence (a history field, a `state` key, a counter's
path) is mapped to one of the parts the trainer declares (`meta.parts`, or the standard set), and
a part whose reported state equals the continuous run's is never named. docs/checks.md has the
table; the probes of judge/summaries/evidence.py confirm an unknown cause by resuming without each candidate part.
"""

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from resumeproof.common import protocol
from resumeproof.common.protocol import DATA, PROGRESS
from resumeproof.verify.judge.compare import compare, join
from resumeproof.verify.judge.parts import part_for
from resumeproof.verify.run.summary import Summary
from resumeproof.verify.vocabulary.findings import Diagnosis

BASIC_FIELDS = frozenset(protocol.RECORD_KEYS)  # step, rows, lr, loss
OPTIMIZER_STEP = re.compile(r"\.step$")  # Adam's per-parameter step counter is a float


@dataclass(frozen=True)
class Context:
    """What the rules know besides the two summaries."""

    resumed_at: int  # k: the first resumed update is k + 1
    parts: tuple[str, ...]  # the trainer's declared parts, or the standard set
    epoch_starts: frozenset[int] = frozenset()  # updates that begin an epoch
    atol: float = 1e-12


@dataclass(frozen=True)
class Facts:
    step: int | None  # the first update whose record differs
    fields: frozenset[str]  # its fields that differ
    evidence: tuple[str, ...]  # paths and reasons of the first differences
    restarted: tuple[str, ...]  # paths of `state` counters off by exactly k: restarted from zero
    draws: tuple[str, ...]  # rng parts whose next draw differs
    state_keys: tuple[str, ...]  # top-level keys of `state` that differ
    equal_state: frozenset[str]  # top-level keys of `state` that are equal
    equal_draws: frozenset[str]  # rng parts whose next draw is reported equal
    differing: frozenset[str]  # compared top-level keys that differ


Found = tuple[tuple[str, ...], str] | None  # (parts, explanation); () parts: the evidence stops at unknown
Rule = tuple[str, Callable[[Facts, Context], Found]]


def _progress(f: Facts, c: Context) -> Found:
    if protocol.STEP not in f.differing and "history" not in f.fields:
        return None
    return _named(
        [PROGRESS], c, "the step counter or the history was not restored: the run counts from the wrong place"
    )


def _rows(f: Facts, c: Context) -> Found:
    if "rows" not in f.fields:
        return None
    if f.step in c.epoch_starts and f.draws:  # the cause, or the effect of drawing another permutation
        moved = ", ".join(f.draws)
        return (), f"a new epoch's first batch differs and {moved} draws otherwise: the data position or the shuffler"
    if f.step in c.epoch_starts:
        return _named([DATA], c, "the first batch of a new epoch differs: a sampler's generator saved one draw off")
    return _named([DATA], c, "another batch was drawn: the data order or position (sampler, epoch, cursor)")


def _fields(f: Facts, c: Context) -> Found:
    extra = sorted(f.fields - BASIC_FIELDS)
    named = [p for p in (part_for(field, c.parts) for field in extra) if p]
    if not named:
        return None
    return tuple(dict.fromkeys(named)), f"the history's {', '.join(extra)} differs: that state was not restored"


def _restarted(f: Facts, c: Context) -> Found:
    named = [_path_part(path, c.parts) for path in f.restarted]
    found = tuple(dict.fromkeys(p for p in named if p))
    if not found:
        return None
    return found, f"a counter of it restarted: it counted {c.resumed_at} updates fewer than the continuous run"


def _draws(f: Facts, c: Context) -> Found:
    if not f.draws:
        return None
    return f.draws, "the generator's next draw differs: its state was not restored (or restored early)"


def _state_only(f: Facts, c: Context) -> Found:
    if f.step is not None or not f.state_keys or f.differing - {protocol.STATE, protocol.EVAL}:
        return None
    named = [part_for(key, c.parts) for key in f.state_keys]
    if not all(named):
        return None
    return tuple(dict.fromkeys(p for p in named if p)), "the history is the same, only this state differs"


RULES: list[Rule] = [
    ("progress", _progress),
    ("rows", _rows),
    ("history-field", _fields),
    ("restarted-counter", _restarted),
    ("next-draws", _draws),
    ("state-only", _state_only),
]


def diagnose(reference: Summary, other: Summary, c: Context) -> Diagnosis | None:
    """Why `other` differs from `reference`; None when it does not."""
    f = facts(reference, other, c)
    if f is None:
        return None
    evidence = "; ".join([*f.evidence[:2], *(f"{p} restarted" for p in f.restarted[:2])])
    for name, rule in RULES:
        found = rule(f, c)
        if found is None:
            continue
        # the progress rule's evidence is the step counter itself: a `state` key named like it proves nothing
        parts = found[0] if name == "progress" else tuple(p for p in found[0] if not exonerated(p, f, c))
        rule_name = "rows-at-epoch-start" if name == "rows" and f.step in c.epoch_starts else name
        if parts or not found[0]:  # named, or the rule itself says the evidence cannot tell
            return Diagnosis(lost=parts, rule=rule_name, step=f.step, evidence=evidence, explanation=found[1])
    return Diagnosis(lost=(), rule="none", step=f.step, evidence=evidence, explanation=_unknown(f, c))


def _unknown(f: Facts, c: Context) -> str:
    """What an unexplained difference leaves open, said without naming a part."""
    if "rows" in f.fields:  # the rows rule matched, but the data position it would name was restored
        return (
            "another batch was drawn, yet the data position's state equals the continuous run's: what feeds the "
            "sampler (its epoch, a seed, the order it was built in) was not restored or not applied"
        )
    if f.fields == {"lr"} or "lr" in f.fields:
        return "the lr differs: a scheduler, or the optimizer's param groups, was not restored"
    if "loss" in f.fields and f.step == c.resumed_at + 1:
        return (
            "the same rows and lr give another loss at the first resumed update: the model's weights or buffers, "
            "or a generator the summary does not report (dropout, augmentation), were not restored"
        )
    if "loss" in f.fields:
        return (
            "the loss differs from the second resumed update on: state that acts on the update (the "
            "optimizer's moments, an accumulated gradient, ...) was not restored"
        )
    return "no rule matches the evidence; read the paths"


def _named(concepts: list[str], c: Context, explanation: str) -> Found:
    parts = tuple(p for p in (part_for(concept, c.parts) for concept in concepts) if p)
    return (parts, explanation) if parts else None


def _path_part(path: str, parts: tuple[str, ...]) -> str | None:
    """The part a `state` path is about: its first component named like a part."""
    for component in re.split(r"[.\[\]]+", path.removeprefix("state."))[:3]:
        if component and not component.isdigit() and (found := part_for(component, parts)):
            return found
    return None


def exonerated(part: str, f: Facts, c: Context) -> bool:
    """The summary shows this part's state equal to the continuous run's: it was restored."""
    if protocol.generator_of(part) is not None:
        return part in f.equal_draws
    return any(part_for(key, c.parts) == part for key in f.equal_state)


def identical(a: Summary, b: Summary) -> bool:
    """Bit-identical compared surfaces: the two runs computed exactly the same thing."""
    return all(
        compare(a.surface(k), b.surface(k), 0.0, k, equal_infinities=True).concordant for k in protocol.COMPARED_KEYS
    )


def facts(reference: Summary, other: Summary, c: Context) -> Facts | None:
    keys = protocol.COMPARED_KEYS
    differing = {key for key in keys if not _same(reference.surface(key), other.surface(key), c.atol, key)}
    if not differing:
        return None
    step, fields, evidence = first_record(reference.history, other.history, c.atol)
    if step is None and protocol.HISTORY in differing:
        fields, evidence = {protocol.HISTORY}, [f"history length {len(reference.history)} vs {len(other.history)}"]
    state_a, state_b = reference.state, other.state
    top_a, top_b = (s if isinstance(s, dict) else {} for s in (state_a, state_b))
    shared = [key for key in top_a if key in top_b]
    same = {key for key in shared if _same(top_a[key], top_b[key], c.atol, f"state.{key}")}
    draws_a, draws_b = draws(reference, c.parts), draws(other, c.parts)
    moved = {p for p in draws_a if p in draws_b and not _same(draws_a[p], draws_b[p], c.atol, p)}
    if not evidence:
        evidence = [f"{m.path}: {m.reason}" for m in compare(reference.surfaces, other.surfaces, c.atol).mismatches[:3]]
    return Facts(
        step=step,
        fields=frozenset(fields),
        evidence=tuple(evidence),
        restarted=tuple(restarted(state_a, state_b, c.resumed_at, protocol.STATE)),
        draws=tuple(p for p in c.parts if p in moved),
        state_keys=tuple(k for k in shared if k not in same),
        equal_state=frozenset(same),
        equal_draws=frozenset(p for p in draws_a if p in draws_b and p not in moved),
        differing=frozenset(differing),
    )


def _same(a: Any, b: Any, atol: float, path: str) -> bool:
    return compare(a, b, atol, path, equal_infinities=path.startswith(protocol.STATE)).concordant


def first_record(a: list, b: list, atol: float) -> tuple[int | None, set[str], list[str]]:
    """The first history record that differs: its step, the fields that differ, and the evidence."""
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        result = compare(x, y, atol, f"history[{i}]")
        if not result.concordant:
            fields = {m.path.removeprefix(f"history[{i}].").split("[")[0].split(".")[0] for m in result.mismatches}
            return x.get("step", i + 1), fields, [f"{m.path}: {m.reason}" for m in result.mismatches[:2]]
    return None, set(), []


def restarted(a: Any, b: Any, k: int, path: str, counted: bool = True) -> list[str]:
    """Paths of counters that differ by exactly k: the ints (not bools) held under a key of `state`, and
    optimizer step counters. An int inside a list is data (a permutation, row ids), never a counter."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [p for key in a if key in b for p in restarted(a[key], b[key], k, join(path, key))]
    if isinstance(a, list) and isinstance(b, list):
        pairs = enumerate(zip(a, b, strict=False))
        return [p for i, (x, y) in pairs for p in restarted(x, y, k, join(path, i), counted=False)]
    is_int = counted and all(isinstance(v, int) and not isinstance(v, bool) for v in (a, b))
    is_step = OPTIMIZER_STEP.search(path) is not None and all(protocol.is_number(v) for v in (a, b))
    return [path] if (is_int or is_step) and k and abs(a - b) == k else []


def draws(summary: Summary, parts: tuple[str, ...]) -> dict[str, Any]:
    """The next draws the summary reports, by rng part: any leaf under `next` whose key or a key above
    it names a generator (`next.rng.numpy`, `next.draws.numpy`, `next.numpy`)."""
    generators = {protocol.generator_of(p): p for p in parts if protocol.generator_of(p)}
    found: dict[str, Any] = {}

    def walk(value: Any, names: list[str]) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                walk(item, [*names, str(key)])
            return
        named = [generators[n] for n in reversed(names) if n in generators]
        if named:
            found.setdefault(named[0], []).append(value)

    walk({k: v for k, v in summary.next.items() if k != protocol.LR}, [])
    return found
