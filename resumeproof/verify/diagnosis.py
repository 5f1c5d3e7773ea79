"""Name the state a resume most likely lost, from where and at which step its run first differs.

The rules are tried in order; the first that matches names the lost state with the part names of
`--omit` (model, optimizer, scheduler, rng-NAME, data, progress), so that a fault's diagnosis can
be checked against the part it omitted. They read only the summaries (docs/checks.md has the
table): the first update whose record differs, which of its fields differ, the integer counters
of `state`, and the generators' next draws in `next.rng`.
"""

import re
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from resumeproof.common import protocol
from resumeproof.verify.compare import compare

OPTIMIZER_STEP = re.compile(r"(^|\.)optim[a-z_]*\..*\bstep$")  # Adam's per-parameter step counter, ...
SCHEDULER_COUNTER = re.compile(r"(^|\.)(sched[a-z_]*\..*|last_epoch$)")


@dataclass(frozen=True)
class Diagnosis:
    lost: str  # the likely lost state, in --omit's part names
    rule: str  # which row of the table decided it
    step: int | None  # the first update where the runs differ
    evidence: str  # the differences that decided it, by path
    explanation: str  # one sentence a user can act on

    def entry(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class _Facts:
    resumed_at: int  # the resume point k: the first resumed update is k + 1
    step: int | None  # the first update whose record differs
    fields: set[str]  # its fields that differ: rows, lr, loss, ...
    evidence: list[str]  # paths and reasons of the first differences
    counters: list[str]  # paths of integer counters in `state` that differ (and optimizer step counters)
    generators: list[str]  # generators whose next draw differs
    other_keys: set[str]  # top-level keys beyond history that differ: step, state, next, eval
    epoch_starts: set[int]  # updates that begin an epoch (k + 1 for every boundary k)


Rule = tuple[str, Callable[[_Facts], str | None], str]


def _progress(f: _Facts) -> str | None:
    return "progress" if "step" in f.other_keys or "history" in f.fields else None


def _rows(f: _Facts) -> str | None:
    return "data" if "rows" in f.fields else None


def _counters(f: _Facts) -> str | None:
    if any(OPTIMIZER_STEP.search(path) for path in f.counters):
        return "optimizer"
    if "lr" in f.fields or any(SCHEDULER_COUNTER.search(path) for path in f.counters):
        return "scheduler"
    return None


def _generators(f: _Facts) -> str | None:
    return ", ".join(f"rng-{name}" for name in f.generators) if f.generators else None


def _weights(f: _Facts) -> str | None:
    if f.step is None:
        return None
    return "model" if f.step == f.resumed_at + 1 else "optimizer"


RULES: list[Rule] = [
    ("progress", _progress, "the step counter or the history was not restored: the run counts from the wrong place"),
    ("rows", _rows, "another batch was drawn: the data order or position (sampler, epoch, cursor) was not restored"),
    ("counters", _counters, "a counter of the optimizer or the lr schedule differs: that object was not restored"),
    ("next-draws", _generators, "the generator's next draw differs: its state was not restored (or restored early)"),
    (
        "weights",
        _weights,
        "the same batch and lr give another loss: the model was not restored (or, when it shows "
        "only from the second resumed update, the optimizer's moments)",
    ),
]
EPOCH_START = "the first batch of a new epoch differs: a sampler's generator was saved one draw behind or ahead"


def diagnose(
    reference: dict[str, Any], other: dict[str, Any], atol: float, resumed_at: int, boundaries: tuple[int, ...] = ()
) -> Diagnosis | None:
    """Why `other` (resumed at update `resumed_at`) differs from `reference`; None when it does not."""
    facts = _facts(reference, other, atol, resumed_at, boundaries)
    if facts is None:
        return None
    for name, rule, explanation in RULES:
        lost = rule(facts)
        if lost is not None:
            if name == "rows" and facts.step in facts.epoch_starts:
                name, explanation = "rows-at-epoch-start", EPOCH_START
            evidence = "; ".join([*facts.evidence[:2], *(f"{p} differs" for p in facts.counters[:2])])
            return Diagnosis(lost, name, facts.step, evidence, explanation)
    return Diagnosis("unknown", "none", facts.step, "; ".join(facts.evidence[:3]), "no rule matches; read the paths")


def identical(a: dict[str, Any], b: dict[str, Any], keys: tuple[str, ...]) -> bool:
    """Bit-identical compared surfaces: the two runs computed exactly the same thing."""
    return all(compare(a[key], b[key], 0.0, key).concordant for key in keys)


NO_RANDOM_STATE = Diagnosis(
    lost="random state",
    rule="identical-to-full-resume",
    step=None,
    evidence="the resume without RNG restore equals the full resume bit for bit",
    explanation="the checkpoint restores no random state, or the trainer ignores --omit-rng-restore",
)


def _facts(
    reference: dict[str, Any], other: dict[str, Any], atol: float, resumed_at: int, boundaries: tuple[int, ...]
) -> _Facts | None:
    keys = [key for key in protocol.COMPARED_KEYS if key in reference and key in other]
    differing = {key for key in keys if not compare(reference[key], other[key], atol, key).concordant}
    if not differing:
        return None
    step, fields, evidence = _first_record(reference["history"], other["history"], atol)
    if step is None and "history" in differing:
        fields, evidence = {"history"}, [f"history length {len(reference['history'])} vs {len(other['history'])}"]
    counters = _differing_counters(reference.get("state"), other.get("state"), "state")
    draws, others = _rng(reference), _rng(other)
    moved = [name for name in sorted(draws) if not compare(draws[name], others.get(name), atol).concordant]
    if not evidence:
        evidence = [f"{m.path}: {m.reason}" for m in compare(reference, other, atol).mismatches[:3]]
    return _Facts(
        resumed_at, step, fields, evidence, counters, moved, differing - {"history"}, {k + 1 for k in boundaries}
    )


def _first_record(a: list, b: list, atol: float) -> tuple[int | None, set[str], list[str]]:
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        result = compare(x, y, atol, f"history[{i}]")
        if not result.concordant:
            fields = {m.path.removeprefix(f"history[{i}].").split("[")[0].split(".")[0] for m in result.mismatches}
            return x.get("step", i + 1), fields, [f"{m.path}: {m.reason}" for m in result.mismatches[:2]]
    return None, set(), []


def _differing_counters(a: Any, b: Any, path: str) -> list[str]:
    """Paths of the counters that differ: every int (not bool) of `state`, and optimizer step counters."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [p for key in a if key in b for p in _differing_counters(a[key], b[key], f"{path}.{key}")]
    if isinstance(a, list) and isinstance(b, list):
        pairs = enumerate(zip(a, b, strict=False))
        return [p for i, (x, y) in pairs for p in _differing_counters(x, y, f"{path}[{i}]")]
    is_int = all(isinstance(v, int) and not isinstance(v, bool) for v in (a, b))
    is_step = OPTIMIZER_STEP.search(path) is not None and all(isinstance(v, int | float) for v in (a, b))
    return [path] if (is_int or is_step) and a != b else []


def _rng(summary: dict[str, Any]) -> dict[str, Any]:
    draws = summary.get("next", {}).get("rng") if isinstance(summary.get("next"), dict) else None
    return draws if isinstance(draws, dict) else {}
