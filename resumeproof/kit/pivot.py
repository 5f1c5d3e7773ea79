"""A deliberate pivot on resume: change the learning rate on purpose, keep everything else, record it.

A pivoted run is another run from the pivot on. The change goes into the first resumed history
record (so no comparison can call the run concordant with an unchanged one), into the start line
of loss.jsonl and into every later checkpoint's provenance.
"""

from typing import Any

import torch

from resumeproof.common.errors import ResumeproofError

# What a pivot may change, and the optimizer and scheduler constants each one moves (so that the
# checkpoint's own values for them are not held against it).
PIVOTS = {"lr": frozenset({"lr", "initial_lr", "base_lrs"})}


class PivotError(ResumeproofError):
    """A pivot this run cannot make."""


def parse(items: tuple[str, ...]) -> dict[str, float]:
    """'lr=0.01' items into {key: value}."""
    pivots = {}
    for item in items:
        key, _, value = item.partition("=")
        if key not in PIVOTS:
            raise PivotError(f"--pivot {item!r}: only {', '.join(PIVOTS)} can change on resume")
        try:
            pivots[key] = float(value)
        except ValueError:
            raise PivotError(f"--pivot {item!r}: {value!r} is not a number") from None
        if not pivots[key] > 0:
            raise PivotError(f"--pivot {item!r}: must be > 0")
    return pivots


def changed_keys(pivots: dict[str, float]) -> frozenset[str]:
    """The checkpoint keys the declared pivots change."""
    return frozenset().union(*(PIVOTS[key] for key in pivots))


def apply_lr(new_lr: float, optimizer: torch.optim.Optimizer, scheduler: Any) -> dict[str, list[float]]:
    """Move a restored run onto a new base lr: the schedule keeps its place, scaled to the new base.
    Returns {"lr": [old, new]}, or {} when the lr is already the base (restating it is no pivot)."""
    old = scheduler.base_lrs[0]
    if new_lr == old:
        return {}
    for group in optimizer.param_groups:
        group["lr"] *= new_lr / old
        group["initial_lr"] = new_lr
    scheduler.base_lrs = [new_lr] * len(optimizer.param_groups)
    scheduler._last_lr = [group["lr"] for group in optimizer.param_groups]  # what get_last_lr() reports
    return {"lr": [old, new_lr]}
