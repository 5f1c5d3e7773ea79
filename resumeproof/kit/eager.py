"""Keep torch.optim from importing TorchDynamo in a process that only ever runs eagerly.

torch.optim imports `torch._dynamo` (about 0.9 s, a third of a short run) the first time an
optimizer is built, stepped or (de)serialised, and only to call `graph_break()` and
`disable(fn)`. Outside `torch.compile` both leave eager execution exactly as it is, so a
stand-in providing just these two changes no number (tests/test_eager.py runs the same training
with and without it and requires bit-identical results). Anything else touching the stand-in
raises AttributeError: a torch that needs more fails loudly instead of computing differently.
"""

import sys
import types
from collections.abc import Callable
from typing import Any

import torch


def _graph_break() -> None:
    """Eager mode has no graph to break."""


def _disable(fn: Callable[..., Any] | None = None, recursive: bool = True, **_: Any) -> Any:
    """Eager mode never traces, so there is nothing to disable: return the function as it is."""
    return fn if fn is not None else (lambda f: f)


def skip_dynamo_import() -> None:
    """Register the stand-in unless the real TorchDynamo is already loaded (then it is used)."""
    if "torch._dynamo" in sys.modules:
        return
    stand_in = types.ModuleType("torch._dynamo", "Eager-only stand-in, see resumeproof.eager.")
    stand_in.graph_break = _graph_break  # type: ignore[attr-defined]
    stand_in.disable = _disable  # type: ignore[attr-defined]
    sys.modules["torch._dynamo"] = stand_in
    torch._dynamo = stand_in
