"""What the observer blocks when the verifier asks (common/observation.py's BLOCK_ENV): the generators' setters, for
the negative control of an unmodified trainer, or one part's `load_state_dict`, for a fault.

A blocked call does nothing and answers its caller as the real one would (`Module.load_state_dict` returns its
key report, `Generator.set_state` its generator), so that the trainer resumes without that state instead of crashing;
every blocked call is written down (`Observer.blocked`), so that a control that changed nothing can say whether
anything was there to block. Seeding (`manual_seed`, `seed`) is never blocked: it is not a restore. Nor is a copy or
an unpickling (`copy.deepcopy`, `__setstate__`): a generator saved as an object comes back whole.

The setters are the process-wide generators' and those of the generators a trainer builds itself: a
`torch.Generator`'s `set_state`, a NumPy bit generator's `state` (what `gen.bit_generator.state = saved` sets), a
`RandomState`'s `set_state`, a `random.Random`'s `setstate`. torch's and NumPy's classes are C types that cannot be
patched: their names in `torch` and `numpy.random` (and `numpy.random.default_rng`, which builds its PCG64 in C) are
replaced by stand-ins that differ in the blocked setter alone (`_stand_in`). A generator built before the observer
was installed (`torch.default_generator`, one built before torch or `numpy.random` was imported, `from numpy.random
import default_rng` before torch) keeps its setter: a control that then blocked nothing says it is not applicable.
"""

import copy
import functools
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
# The generators a trainer builds itself, by their classes' names in `numpy.random`: a bit generator's `state` setter
# (under a `Generator`) and a legacy RandomState's `set_state`.
BIT_GENERATORS = ("PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64")
RANDOM_STATE = "RandomState"


def install(o: Observer, rng: bool, parts: frozenset[str]) -> None:
    """Block what was asked: the generators' setters (`rng`) and the `load_state_dict` of each part in `parts`."""
    if rng:
        for owner, name in (*TORCH_SETTERS, *((torch.cuda, n) for n in CUDA_SETTERS), *PYTHON_SETTERS):
            _replace(o, owner, name, None)
        _torch_generators(o)
        _python_generators(o)
    for part in parts:
        for owner, answer in _loaders(part):
            _replace(o, owner, "load_state_dict", answer)


def numpy_imported(o: Observer, module: Any) -> None:
    """NumPy's legacy global generator and the generators a trainer builds, once `numpy.random` has run."""
    for name in NUMPY_SETTERS:
        _replace(o, module, name, None)
    stand_ins: dict[str, type] = {}
    for name in BIT_GENERATORS:
        base = getattr(module, name, None)  # PCG64DXSM came with NumPy 1.21: an older one has none to block
        stand_in = _bit_generator(o, base) if isinstance(base, type) else None
        if stand_in is not None:
            stand_ins[name] = stand_in
            setattr(module, name, stand_in)
    legacy = getattr(module, RANDOM_STATE, None)  # its __reduce__ builds a real one: a copy, a pickle restore as ever
    stand_in = _stand_in(legacy, {"set_state": _no_op(o, f"{RANDOM_STATE}.set_state")}) if legacy else None
    if stand_in is not None:
        setattr(module, RANDOM_STATE, stand_in)
    if "PCG64" in stand_ins and callable(getattr(module, "default_rng", None)):
        module.default_rng = _default_rng(module, stand_ins["PCG64"])


def _torch_generators(o: Observer) -> None:
    """`torch.Generator`, for every generator built from now on, any device: its `set_state` returns the generator
    and restores nothing. Its copies and pickles are of torch's own class (its `__reduce__` names it). Not blocked:
    `graphsafe_set_state`, which swaps in the state of another live Generator (`graphsafe_get_state`, `clone_state`)
    that no checkpoint holds, for CUDA graphs and compiled RNG (torch._functorch): no resume restores through it, and
    blocking it would break a capture instead; `set_offset`, which moves a CUDA generator's stream after a seed."""
    record = _recorder(o, "Generator.set_state")

    def set_state(self: Any, new_state: Any) -> Any:
        record()
        return self

    stand_in = _stand_in(torch.Generator, {"set_state": set_state})
    if stand_in is not None:
        setattr(torch, "Generator", stand_in)  # noqa: B010 -- mypy refuses an assignment to a class


def _bit_generator(o: Observer, base: Any) -> type | None:
    """A stand-in for one of NumPy's bit generators whose `state` reads as ever and ignores what it is set to.

    A bit generator's `__reduce__` names its own class and its `__setstate__` sets `state`, as its `jumped` sets the
    state of a new one of its class: a copy (`copy.deepcopy` of a Generator), a pickle or a jump of the stand-in would
    lose its state (and a pickle would name a class no other process can load). So its `__reduce__` names the real
    class, and it jumps a real copy: a copy or a jump is a real bit generator, and a pickle loads anywhere."""
    record = _recorder(o, f"{base.__name__}.state")
    read = base.state.__get__  # the property itself, read off the class

    def reduce(self: Any) -> Any:
        build, args, state = base.__reduce__(self)
        return build, tuple(base if kind is type(self) else kind for kind in args), state

    jumps = {"jumped": lambda self, *a, **k: base.jumped(copy.copy(self), *a, **k)} if hasattr(base, "jumped") else {}
    return _stand_in(base, {"state": property(read, lambda self, value: record()), "__reduce__": reduce, **jumps})


def _default_rng(module: Any, pcg64: type) -> Callable[..., Any]:
    """`numpy.random.default_rng` over the stand-in PCG64 (the real one builds its own in C), seeded as the real one
    seeds it: the same stream bit for bit. A Generator or a bit generator passed in goes to the real one, as ever."""
    real = module.default_rng
    passed = tuple(k for k in (getattr(module, "Generator", None), getattr(module, "BitGenerator", None)) if k)

    @functools.wraps(real)
    def default_rng(seed: Any = None) -> Any:
        return real(seed if isinstance(seed, passed) else pcg64(seed))

    return default_rng


def _python_generators(o: Observer) -> None:
    """`random.Random` (a Python class: patched in place, every instance included): its `setstate` restores nothing.
    Its `__setstate__` (pickle's and `copy.deepcopy`'s restore) calls `setstate`: it is given the real one."""
    setstate = random.Random.setstate
    restore = {"setstate": _no_op(o, "Random.setstate"), "__setstate__": lambda self, state: setstate(self, state)}
    for name, function in restore.items():
        setattr(random.Random, name, function)


def _stand_in(base: type, namespace: dict[str, Any]) -> type | None:
    """A subclass of `base` with `namespace` over it, named as `base` (a NumPy state names its class, and a repr reads
    the same), that `isinstance` and `issubclass` answer for as for `base` itself: `torch.default_generator` is still a
    `torch.Generator`. None where `base` cannot be subclassed: none of the releases tested here, and its generators'
    setters then stay as they are (a control that blocked nothing says it is not applicable)."""
    checks = {
        "__instancecheck__": lambda cls, obj: isinstance(obj, base),
        "__subclasscheck__": lambda cls, kind: issubclass(kind, base),
    }
    own = {"__slots__": (), "__module__": base.__module__, "__qualname__": base.__qualname__}
    try:
        return type(f"StandIn{base.__name__}", (type(base),), checks)(base.__name__, (base,), {**own, **namespace})
    except TypeError:
        return None


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
    setattr(owner, name, _no_op(o, f"{getattr(owner, '__name__', type(owner).__name__)}.{name}", answer))


def _no_op(o: Observer, label: str, answer: Callable[[], Any] | None = None) -> Callable[..., Any]:
    """A function that records `label` as blocked and returns `answer()` (None without one), whatever it is given."""
    record = _recorder(o, label)

    def blocked(*args: Any, **kwargs: Any) -> Any:
        record()
        return answer() if answer is not None else None

    blocked.__name__ = label.rpartition(".")[2]
    return blocked


def _recorder(o: Observer, label: str) -> Callable[[], None]:
    """What a blocked call does: write `label` down, once."""

    def record() -> None:
        if label not in o.blocked:
            o.blocked.append(label)

    return record
