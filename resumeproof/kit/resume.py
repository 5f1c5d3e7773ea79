"""Where a process starts: a fresh run, an explicit `--resume`, or `--resume auto` in place; in the standard layout.

    run_dir, start = resume.begin(args, training, expected, warn)   # all but the generators restored
    ...                                                              # (the caller logs its start)
    start.restore_generators(training)                               # last, right before the loop

A refused checkpoint creates nothing: the run directory is created only after the load passed.
A declared pivot is applied to the restored run, and both a pivot and an accepted foreign
checkpoint become `marks` for the first resumed history record, where the comparison sees them.
"""

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from resumeproof.common.errors import ResumeproofError
from resumeproof.kit import checkpoint, layout, pivot
from resumeproof.kit.flags import ProtocolArgs
from resumeproof.kit.rundir import RunDir

Loaded = tuple[dict[str, Any], list[str]]  # a validated state, and the identity differences accepted


@dataclass(frozen=True)
class Start:
    source: Path | None = None  # what this process continues from
    rng: dict[str, Any] | None = None  # the saved generator states ...
    generators: tuple[str, ...] = ()  # ... and the names to restore from them
    marks: dict[str, Any] = field(default_factory=dict)  # for the first resumed record: override, pivot
    pivot: dict[str, list[float]] | None = None  # this resume's pivot: key -> [old, new]
    provenance: tuple[dict[str, Any], ...] = ()  # every pivot of the run so far

    def restore_generators(self, t: layout.Training) -> None:
        if self.rng is not None:
            t.generators.restore(self.rng, self.generators)


def begin(
    args: ProtocolArgs, t: layout.Training, expected: layout.Expected, warn: Callable[[str], None],
    accept_foreign: bool = False, pivots: dict[str, float] | None = None,
) -> tuple[RunDir, Start]:  # fmt: skip
    """Find and validate what to continue from, restore it (all but the generators), open the run directory."""

    def load(path: Path) -> Loaded:
        state = checkpoint.load(path)
        return state, layout.validate(path, state, expected, accept_foreign)

    if args.resume_auto:
        run_dir, found = RunDir.in_place(
            args.output, load, lambda loaded: loaded[0][layout.PROGRESS]["step"], warn, args.checkpoint_every, args.keep
        )
    else:
        found = (args.resume, load(args.resume)) if args.resume else None
    start = continue_from(found, t, args.omit, pivots or {})
    if not args.resume_auto:
        run_dir = RunDir.create(args.output, args.checkpoint_every, args.keep)
    return run_dir, start


def continue_from(
    found: tuple[Path, Loaded] | None, t: layout.Training, omit: frozenset[str], pivots: dict,
    restore: Callable[[dict[str, Any], layout.Training, frozenset[str]], list[str]] = layout.restore,
) -> Start:  # fmt: skip
    """Restore a validated state (all but the generators, with `restore`), apply a pivot, mark the first record."""
    if found is None:
        if pivots:
            raise ResumeproofError("--pivot changes a resumed run; there is nothing to resume here")
        return Start()
    source, (state, foreign) = found
    names = restore(state, t, omit)
    changed = pivot.apply_lr(pivots["lr"], t.optimizer, t.scheduler) if "lr" in pivots else {}
    provenance = tuple(state.get(layout.PROVENANCE, [])) + (({"step": t.step, "pivot": changed},) if changed else ())
    # Both go into a compared record, so that such a run is never concordant with an unchanged one.
    marks = {**({"override": foreign} if foreign else {}), **({"pivot": changed} if changed else {})}
    return Start(source, state[layout.RNG], tuple(names), marks, changed or None, provenance)
