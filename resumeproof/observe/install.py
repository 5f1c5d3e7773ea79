"""The observer's hooks into torch (global module and optimizer hooks), and the few functions it wraps to learn
what no hook tells: the loss handed to backward (unscaled, where a GradScaler scales it), the target a loss function
is given, the LR schedulers and GradScalers a trainer builds, a step a GradScaler skips, and every generator restore
or seed (torch's, CUDA's, NumPy's legacy global, Python's `random`, and the kit's `Generators`).

Every wrapper calls the original first or last exactly as it was called, and keeps what it learns behind a guard:
a failure inside the observer stops the recording and is written down, never raised into the trainer.
"""

from __future__ import annotations  # `Observer` below is a name for mypy alone

import atexit
import contextlib
import functools
import os
import random
import socket
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any

import torch
from torch.nn.modules import module as torch_module
from torch.optim import lr_scheduler, swa_utils
from torch.optim import optimizer as torch_optimizer

if TYPE_CHECKING:  # mypy checks this module against observe/observer.py's class. At run time nothing of the package is
    # imported: sitecustomize loads both modules by their paths (a trainer without resumeproof is watched too) and
    # hands observer.py to install().
    from resumeproof.observe.observer import Observer

NUMPY_RANDOM, KIT_GENERATORS = "numpy.random", "resumeproof.kit.generators"  # modules patched once imported


def install(
    names: ModuleType,
    observer: ModuleType,
    block: ModuleType | None,
    fingerprint: ModuleType,
    environ: Mapping[str, str],
    watch: tuple[ModuleType, ModuleType] | None = None,
) -> Observer:
    """Watch this process as `environ` asks (the verifier's OBSERVE_ENV, UPDATES_ENV, STOP_ENV, BLOCK_ENV); `names`
    is common/observation.py, `observer` observe/observer.py, `block` observe/block.py (None: nothing to block) and
    `fingerprint` observe/fingerprint.py, as sitecustomize loaded them. `watch`: observe/watch.py and
    common/watching.py under `resumeproof watch` (WATCH_ENV, no verifier): the first update alone is recorded, into the
    watch folder, and the run's saves and loads are watched."""
    rank = int(environ["RANK"]) if "RANK" in environ and "WORLD_SIZE" in environ else None
    if watch is not None:
        o: Observer = observer.Observer(names, fingerprint, _watched_record(watch[1], environ), frozenset({1}), rank)
        watch[0].install(o, watch[1], environ)
    else:
        o = _observer(names, observer, fingerprint, environ, rank)
    torch_module.register_module_forward_pre_hook(guarded(o, o.forward_pre))
    torch_module.register_module_forward_hook(guarded(o, o.forward_post), always_call=True, with_kwargs=True)
    torch_optimizer.register_optimizer_step_pre_hook(guarded(o, o.step_pre))
    torch_optimizer.register_optimizer_step_post_hook(guarded(o, o.step_post))
    _losses(o)
    _targets(o)
    _built(o)
    _iterators(o)
    _torch_restores(o, names)
    _python_restores(o, names)
    blocks = names.blocks_asked(environ.get(names.BLOCK_ENV))
    if block is not None:  # loaded only where something is to be blocked (sitecustomize)
        block.install(o, names.RNG_SETTERS in blocks, blocks - {names.RNG_SETTERS})  # over the wrappers: unseen
    o.blocking = (block, names.RNG_SETTERS in blocks)
    atexit.register(guarded(o, o.exiting))  # what the process finished, for a trainer stopped by its own handler
    return o


def _observer(
    names: ModuleType, observer: ModuleType, fingerprint: ModuleType, environ: Mapping[str, str], rank: int | None
) -> Observer:
    """The verifier's observer: the updates it asks for, stopped, held or kept by value as it asks."""
    wanted = names.updates_wanted(environ.get(names.UPDATES_ENV))
    stop = names.stop_asked(environ.get(names.STOP_ENV))
    values = environ.get(names.VALUES_ENV) == "1"
    record = names.restarted(environ[names.OBSERVE_ENV], environ)
    if record != environ[names.OBSERVE_ENV] and stop is not None and stop[0] == names.PAUSE:
        stop = None  # a preempted job's restart: only its first start is held
    return observer.Observer(names, fingerprint, record, wanted, rank, stop, values)


def _watched_record(watching: ModuleType, environ: Mapping[str, str]) -> str:
    """Where a watched process keeps its first update's record: one file per start, in the watch folder."""
    record = watching.process_record(environ[watching.WATCH_ENV], socket.gethostname(), os.getpid())
    record.parent.mkdir(parents=True, exist_ok=True)
    return str(record)


def imported(o: Observer, names: ModuleType, name: str, module: ModuleType) -> None:
    """A module the observer patches, once it has run (sitecustomize says so, whether before torch or after)."""
    if name == NUMPY_RANDOM:
        for function in ("set_state", "seed"):
            _after(module, function, guarded(o, lambda *a, **k: o.restored(names.GLOBAL, ["numpy"], _global(o))))
        block, rng = o.blocking
        if rng and block is not None:
            block.numpy_imported(o, module)
    elif name == KIT_GENERATORS:
        kind = module.Generators

        def built(self: Any, *args: Any, **named: Any) -> None:
            if named:  # a trainer's generators; `Generators()` bare is the kit's scratch copy for check()
                o.kit_generators.add(self)

        def restored(self: Any, state: Any, names_: Any = None) -> None:
            if self in o.kit_generators:
                o.restored(names.KIT, list(self.names if names_ is None else names_), lambda: o.kit_states(self))

        _after(kind, "__init__", guarded(o, built))

        _after(kind, "restore", guarded(o, restored))


def guarded(o: Observer, hook: Callable[..., Any]) -> Callable[..., None]:
    """`hook`, unable to raise into the trainer: its first failure stops the recording and is written down."""

    def run(*args: Any, **kwargs: Any) -> None:
        if o.failed is not None:
            return
        try:
            hook(*args, **kwargs)
        except Exception as err:  # inside someone else's process: say why in the record, never raise
            o.failed = f"{getattr(hook, '__name__', 'hook')}: {type(err).__name__}: {err}"
            with contextlib.suppress(OSError):  # nowhere to say it: the verifier judges the trainer without records
                o.write()

    return run


def _after(owner: Any, name: str, notify: Callable[..., None]) -> None:
    original = getattr(owner, name)

    @functools.wraps(original)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        notify(*args, **kwargs)
        return result

    setattr(owner, name, wrapper)


def _before(owner: Any, name: str, notify: Callable[..., None]) -> None:
    original = getattr(owner, name)

    @functools.wraps(original)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        notify(*args, **kwargs)
        return original(*args, **kwargs)

    setattr(owner, name, wrapper)


def _losses(o: Observer) -> None:
    """The loss: what GradScaler.scale is given (unscaled), else what backward is called on."""
    scaler = torch.amp.GradScaler
    _before(scaler, "scale", guarded(o, lambda self, outputs: o.loss(outputs, self.get_scale())))
    _before(torch.Tensor, "backward", guarded(o, lambda self, *a, **k: o.loss(self)))
    _before(torch.autograd, "backward", guarded(o, lambda tensors, *a, **k: o.loss(_first(tensors))))
    _before(torch.autograd, "backward", guarded(o, lambda *a, **k: o.backward()))  # Tensor.backward calls it


# torch.nn.functional's losses of an (input, target) pair, which torch's loss modules call too (`F.cross_entropy` inside
# `nn.CrossEntropyLoss`): looked up on the module at every call, so the wrapper sees both.
TARGETED = (
    "cross_entropy",
    "nll_loss",
    "mse_loss",
    "l1_loss",
    "smooth_l1_loss",
    "huber_loss",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "kl_div",
    "poisson_nll_loss",
    "soft_margin_loss",
    "multilabel_soft_margin_loss",
    "multilabel_margin_loss",
    "multi_margin_loss",
)


def _targets(o: Observer) -> None:
    """The target each loss function is given (a class index, a regression target): data no forward pass takes."""

    def given(*args: Any, **kwargs: Any) -> None:
        o.target(args[0] if args else kwargs.get("input"), args[1] if len(args) > 1 else kwargs.get("target"))

    functional = torch.nn.functional
    for name in TARGETED:
        if hasattr(functional, name):
            _before(functional, name, guarded(o, given))


def _built(o: Observer) -> None:
    """Every LR scheduler, GradScaler and averaged model (an EMA, SWA: `torch.optim.swa_utils.AveragedModel`) built
    from now on; a step a GradScaler skips still ends the update."""
    for kind in vars(lr_scheduler).values():
        if isinstance(kind, type) and issubclass(kind, lr_scheduler.LRScheduler) and "__init__" in vars(kind):
            _after(kind, "__init__", guarded(o, lambda self, *a, **k: o.schedulers.add(self)))
    scaler = torch.amp.GradScaler
    _after(scaler, "__init__", guarded(o, lambda self, *a, **k: o.scalers.add(self)))
    _after(swa_utils.AveragedModel, "__init__", guarded(o, lambda self, *a, **k: o.averaged.add(self)))
    step = scaler.step

    @functools.wraps(step)
    def stepping(self: Any, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        before = o.update
        result = step(self, optimizer, *args, **kwargs)
        if o.update == before and self.is_enabled():  # the optimizer's step was skipped: an inf or NaN gradient
            guarded(o, o.end_update)(optimizer)
        return result

    scaler.step = stepping  # type: ignore[method-assign]


def _iterators(o: Observer) -> None:
    """Each new DataLoader iterator, torch's and torchdata's alike (their common base, private: a missing one leaves
    `--interrupt-at epochs` without boundaries, which says so), with the update in progress."""
    base = getattr(torch.utils.data.dataloader, "_BaseDataLoaderIter", None)
    if base is not None:
        _before(base, "__init__", guarded(o, lambda *args, **kwargs: o.iterators.add(o.update)))


def _torch_restores(o: Observer, names: ModuleType) -> None:
    for owner in (torch, torch.random):
        for function in ("set_rng_state", "manual_seed", "seed"):
            _after(owner, function, guarded(o, lambda *a, **k: o.restored(names.GLOBAL, ["torch"], _global(o))))
    for function in ("set_rng_state", "set_rng_state_all", "manual_seed", "manual_seed_all", "seed", "seed_all"):
        _after(torch.cuda, function, guarded(o, lambda *a, **k: o.restored(names.GLOBAL, ["cuda"], _global(o))))


def _python_restores(o: Observer, names: ModuleType) -> None:
    for function in ("setstate", "seed"):
        _after(random, function, guarded(o, lambda *a, **k: o.restored(names.GLOBAL, ["python"], _global(o))))


def _global(o: Observer) -> Callable[[], dict[str, str]]:
    return lambda: o.generators()[o.o.GLOBAL]


def _first(tensors: Any) -> Any:
    return tensors[0] if isinstance(tensors, list | tuple) and tensors else tensors
