"""What the observer blocks when the verifier asks (common/observation.py's BLOCK_ENV): the global generators'
setters, for the negative control of an unmodified trainer, or one part's `load_state_dict`, for a fault.

A blocked call does nothing and answers its caller as the real one would (`Module.load_state_dict` returns its
key report), so that the trainer resumes without that state instead of crashing; every blocked call is written
down (`Observer.blocked`), so that a control that changed nothing can say whether anything was there to block.
Seeding (`manual_seed`, `random.seed`) is never blocked: it is not a restore.
"""

import random
from collections import namedtuple
from collections.abc import Callable
from typing import Any

import torch
from torch.nn.modules import module as torch_module
from torch.optim import lr_scheduler

Observer = Any  # observe/observer.py's Observer (loaded by its path, as install.py explains)
# What `Module.load_state_dict` returns: torch's own private type where it has it (docs/architecture.md lists it),
# else a tuple with the same two fields, which is all a caller reads.
FIELDS = "missing_keys unexpected_keys"
KEYS: Any = getattr(torch_module, "_IncompatibleKeys", None) or namedtuple("IncompatibleKeys", FIELDS)

# The generators' setters, by owner: what torch, Lightning, Accelerate and transformers call to restore them.
TORCH_SETTERS = ((torch, "set_rng_state"), (torch.random, "set_rng_state"))
CUDA_SETTERS = ("set_rng_state", "set_rng_state_all")
NUMPY_SETTERS = ("set_state",)
PYTHON_SETTERS = ((random, "setstate"),)


def install(o: Observer, rng: bool, parts: frozenset[str]) -> None:
    """Block what was asked: the generators' setters (`rng`) and the `load_state_dict` of each part in `parts`."""
    if rng:
        for owner, name in (*TORCH_SETTERS, *((torch.cuda, n) for n in CUDA_SETTERS), *PYTHON_SETTERS):
            _replace(o, owner, name, None)
    for part in parts:
        for owner, answer in _loaders(part):
            _replace(o, owner, "load_state_dict", answer)


def numpy_imported(o: Observer, module: Any) -> None:
    """NumPy's legacy global generator, once `numpy.random` has run."""
    for name in NUMPY_SETTERS:
        _replace(o, module, name, None)


def _loaders(part: str) -> list[tuple[Any, Callable[[], Any] | None]]:
    """The classes whose `load_state_dict` restores `part`, each with what its caller gets back."""
    if part == "model":
        return [(torch.nn.Module, lambda: KEYS([], []))]
    if part == "optimizer":
        return [(torch.optim.Optimizer, None)]
    if part == "scheduler":  # LambdaLR and others override it: each scheduler class that defines its own
        kinds = [k for k in vars(lr_scheduler).values() if isinstance(k, type) and "load_state_dict" in vars(k)]
        return [(k, None) for k in kinds if issubclass(k, (lr_scheduler.LRScheduler, lr_scheduler.ReduceLROnPlateau))]
    if part == "scaler":
        return [(torch.amp.GradScaler, None)]
    return []


def _replace(o: Observer, owner: Any, name: str, answer: Callable[[], Any] | None) -> None:
    """`owner.name` made a no-op that records the blocked call and returns `answer()` (None without one)."""
    label = f"{getattr(owner, '__name__', type(owner).__name__)}.{name}"

    def blocked(*args: Any, **kwargs: Any) -> Any:
        if label not in o.blocked:
            o.blocked.append(label)
        return answer() if answer is not None else None

    blocked.__name__ = name
    setattr(owner, name, blocked)
