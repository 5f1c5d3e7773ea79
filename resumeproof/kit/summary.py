"""summary.json, the comparison surface: state of any shape turned into exact JSON, and written atomically.

`to_json` accepts what training state is made of (tensors, NumPy arrays and scalars, state dicts
with int keys, tuples, OrderedDicts, dtypes and devices) and nothing else: an object it does not
know is an error naming its path, never a silent `str()`. Floats keep every bit: Python's JSON
writes the shortest repr, which reads back to the same float64. `meta` is written as given: a run's
flags say what it must hold (`ProtocolArgs.meta()`: the omitted and the declared parts), and a
`kit.Run` adds it by itself.
"""

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

from resumeproof.common import fingerprint, protocol
from resumeproof.common.errors import ResumeproofError


class SummaryError(ResumeproofError):
    """Something in the summary cannot be written as the protocol's JSON."""


def to_json(value: Any, path: str = "") -> Any:
    """A JSON tree from training state: tensors and arrays to nested lists, tuples to lists, keys to strings."""
    if isinstance(value, torch.Tensor | np.ndarray):
        return to_json(value.tolist(), path)
    if isinstance(value, np.generic):
        return to_json(value.item(), path)
    if isinstance(value, bool | int | float | str) or value is None:
        return value
    if isinstance(value, complex):  # JSON has no complex numbers: [real, imaginary]
        return [value.real, value.imag]
    if isinstance(value, torch.dtype | torch.device):
        return str(value)
    if isinstance(value, Mapping):
        tree: dict[str, Any] = {}
        for key, item in value.items():
            name = str(key)
            if name in tree:
                raise SummaryError(f"{path or 'summary'}: keys {key!r} and {name!r} collide as JSON object keys")
            tree[name] = to_json(item, f"{path}.{name}" if path else name)
        return tree
    if isinstance(value, list | tuple):
        return [to_json(item, f"{path}[{i}]") for i, item in enumerate(value)]
    raise SummaryError(f"{path or 'summary'}: a {type(value).__name__} has no exact JSON form; convert it first")


def record(step: int, rows: list[int], lr: float, loss: float, **extra: Any) -> dict[str, Any]:
    """One history record: the update's number, the example ids it consumed, its lr and loss."""
    return {"step": step, "rows": [int(r) for r in rows], "lr": float(lr), "loss": float(loss), **extra}


def write_summary(
    output: Path,
    *,
    step: int,
    history: list[dict[str, Any]],
    state: Any,
    next: dict[str, Any],  # the protocol's own key names
    eval: Any,
    meta: Any = None,
) -> dict[str, Any]:
    """Write OUTPUT/summary.json (atomically) and return the document."""
    if len(history) != step or [r.get("step") for r in history] != list(range(1, step + 1)):
        raise SummaryError(f"history must hold one record per update 1..{step}, it holds {len(history)}")
    if protocol.LR not in next:
        raise SummaryError("next must hold the lr the next update would use")
    document = {
        protocol.PROTOCOL_KEY: protocol.PROTOCOL,
        protocol.STEP: step,
        protocol.HISTORY: to_json(history, protocol.HISTORY),
        protocol.STATE: to_json(state, protocol.STATE),
        protocol.NEXT: to_json(next, protocol.NEXT),
        protocol.EVAL: to_json(eval, protocol.EVAL),
        protocol.META: to_json(meta, protocol.META),
    }
    fingerprint.write_atomic(output / protocol.SUMMARY, protocol.dumps(document).encode())
    return document
