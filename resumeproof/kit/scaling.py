"""AMP's GradScaler as a part of the standard layout: the disabled one a run without loss scaling has, the
counters its state holds (everything else in it is a constant of the experiment), and a check of a saved state."""

import math
from collections.abc import Callable
from typing import Any

import torch

from resumeproof.kit.data import is_int

SCALE, GROWTH_TRACKER = "scale", "_growth_tracker"
COUNTERS = (SCALE, GROWTH_TRACKER)  # what a run changes in a GradScaler's state_dict


def no_scaler() -> torch.amp.GradScaler:
    """A disabled GradScaler: what a run without AMP loss scaling has. Its calls pass through (`scale(loss)` is the
    loss, `step(optimizer)` is `optimizer.step()`, `get_scale()` is 1.0), so one loop serves both."""
    return torch.amp.GradScaler("cpu", enabled=False)


def problem(state: Any, show: Callable[[Any], str] = repr) -> str | None:
    """What is wrong with a saved GradScaler state (a dict whose scale is finite and > 0, whose growth tracker is
    an int >= 0), or None."""
    if not isinstance(state, dict):
        return f"scaler is a {type(state).__name__}, expected a dict (GradScaler.state_dict())"
    scale, tracker = state.get(SCALE), state.get(GROWTH_TRACKER)
    if not (isinstance(scale, int | float) and not isinstance(scale, bool) and math.isfinite(scale) and scale > 0):
        return f"scaler.scale is {show(scale)}, expected a finite number > 0"
    if not is_int(tracker) or tracker < 0:
        return f"scaler._growth_tracker is {show(tracker)}, expected an int >= 0"
    return None
