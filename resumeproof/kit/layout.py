"""The standard checkpoint layout for a loop with one model, optimizer and scheduler: capture, validate, restore.

Keys are named once; capture and restore mirror each other section by section. Before anything
is restored, `validate` checks the loaded state against the freshly built objects of this run:
every section present with the right types, shapes and dtypes; every counter describing the same
instant; the same experiment (config and constant hyper-parameters); and the same code, data
and versions unless the user accepted a foreign checkpoint, in which case the differences are
returned so that the run can record them where the comparison sees them.

AMP: where a run has a GradScaler (fp16 mixed precision), its state is the part `scaler`: captured,
restored unless `--omit=scaler`, its constants checked, and a checkpoint without it refused. A run
without one (no scaler, or a disabled `GradScaler(enabled=False)`, whose calls pass through) has
no scaler part, and a checkpoint holding a scaler's state is refused there: it would be dropped.
"""

import reprlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from resumeproof.common.protocol import (
    DATA,
    HISTORY,
    MODEL,
    OPTIMIZER,
    PROGRESS,
    RNG,
    SCALER,
    SCHEDULER,
    rng_part,
    standard_parts,
)
from resumeproof.kit import scaling
from resumeproof.kit.checkpoint import CheckpointError
from resumeproof.kit.data import OrderStateError, ShuffledOrder, is_int
from resumeproof.kit.generators import Generators, GeneratorStateError
from resumeproof.kit.identity import versions
from resumeproof.kit.scaling import no_scaler
from resumeproof.kit.state_dicts import PLAIN, StateDicts

FORMAT = "resumeproof-checkpoint/1"
# The sections that are parts (MODEL, OPTIMIZER, SCHEDULER, DATA, PROGRESS) and RNG, HISTORY are the protocol's
# words; the others are the layout's own:
FORMAT_KEY, CONFIG, VERSIONS, IDENTITY = "format", "config", "versions", "identity"
PROVENANCE = "provenance"  # the deliberate pivots the run went through, oldest first
REQUIRED_KEYS = frozenset({FORMAT_KEY, MODEL, OPTIMIZER, SCHEDULER, RNG, DATA, PROGRESS, HISTORY, CONFIG})
SECTIONS = (MODEL, OPTIMIZER, SCHEDULER, RNG, DATA, PROGRESS, CONFIG, VERSIONS, IDENTITY)  # dicts


@dataclass(kw_only=True)
class Training:
    """Everything a resume must bring back, as live objects."""

    model: nn.Module
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler
    generators: Generators
    order: ShuffledOrder
    step: int = 0
    history: list[dict[str, Any]] = field(default_factory=list)
    scaler: torch.amp.GradScaler = field(default_factory=no_scaler)  # AMP's; enabled: the part `scaler`

    @property
    def has_scaler(self) -> bool:
        """The run scales its loss (fp16 mixed precision): the scaler's state is part of every checkpoint."""
        return self.scaler.is_enabled()


def parts(generator_names: Iterable[str], scaler: bool = False) -> tuple[str, ...]:
    """What `--omit` may name: each section, one `rng-NAME` per generator, and `scaler` for a run with a GradScaler."""
    return (*standard_parts(tuple(generator_names)), *((SCALER,) if scaler else ()))


def capture(
    t: Training, config: dict[str, Any], identity: dict[str, str], provenance: list, by: StateDicts = PLAIN
) -> dict[str, Any]:
    """Every state that decides the next updates, after a completed update; `restore` mirrors it."""
    model, optimizer = by.get_state_dict(t.model, t.optimizer)
    return {
        FORMAT_KEY: FORMAT,
        MODEL: model,
        OPTIMIZER: optimizer,
        SCHEDULER: t.scheduler.state_dict(),
        **({SCALER: t.scaler.state_dict()} if t.has_scaler else {}),  # the loss scale and its growth tracker
        RNG: t.generators.state(),  # on CUDA: every device's generator, as torch.cuda saves them
        DATA: t.order.state_dict(),  # the epoch's permutation, the position in it, the epoch
        PROGRESS: {"step": t.step},
        HISTORY: t.history,
        CONFIG: config,  # checked on resume, never restored: another experiment is refused
        VERSIONS: versions(),  # these two differ only when --override-identity accepts it
        IDENTITY: identity,
        PROVENANCE: provenance,  # the deliberate pivots the run went through
    }


def restore(state: dict[str, Any], t: Training, omit: Iterable[str] = (), by: StateDicts = PLAIN) -> list[str]:
    """capture() back, section by section in its order: the model and the optimizer (together: a distributed
    state dict loads both at once), the scheduler, the GradScaler, the data position, step and history. An
    omitted part keeps its freshly built state, exactly what a careless resume does. Returns the generators to
    restore, which the caller does last, right before the loop, so that nothing draws from them in between.

    The scheduler must have been *built* before this call, whatever the order of loading: its constructor writes
    the initial lr into the param groups, and would overwrite the restored one if built afterwards."""
    omit = set(omit)
    model, optimizer = (state[key] if key not in omit else None for key in (MODEL, OPTIMIZER))
    by.set_state_dict(t.model, t.optimizer, model_state_dict=model, optim_state_dict=optimizer)
    if SCHEDULER not in omit:
        t.scheduler.load_state_dict(state[SCHEDULER])
    if t.has_scaler and SCALER not in omit:
        t.scaler.load_state_dict(state[SCALER])
    if DATA not in omit:
        t.order.load_state_dict(state[DATA])
    if PROGRESS not in omit:
        t.step, t.history = state[PROGRESS]["step"], list(state[HISTORY])
    return [name for name in t.generators.names if rng_part(name) not in omit]


@dataclass(frozen=True, kw_only=True)
class Expected:
    """What a checkpoint must match to be resumed by this run, read off its freshly built objects."""

    params: dict[str, tuple[tuple[int, ...], torch.dtype]]  # model state_dict names: shape, dtype
    groups: list[list[int]]  # each optimizer param group's parameter indices
    moments: list[tuple[tuple[int, ...], torch.dtype]]  # the geometry of each optimized parameter, by index
    hyper: dict[str, dict[str, Any]]  # per section, the constants a freshly built object holds
    config: dict[str, Any]  # must be equal: another experiment is never resumed
    identity: dict[str, str]  # code and data sha256: different only when accepted
    generators: Generators
    order: ShuffledOrder
    rows_per_step: int  # how far the data position moves per update
    optimizer_keeps_state: bool  # per-parameter state after the first update (Adam's moments, ...)
    pivot: frozenset[str] = frozenset()  # config and hyper-parameter keys a declared pivot changes
    scaler: bool = False  # the run has a GradScaler: its state is required (constants in hyper[SCALER])

    @classmethod
    def of(
        cls,
        t: Training,
        config: dict[str, Any],
        identity: dict[str, str],
        rows_per_step: int,
        pivot: frozenset[str] = frozenset(),
    ) -> "Expected":
        counters = {"params", "lr", "last_epoch"}  # what a run changes; every other public key is a constant
        groups = t.optimizer.state_dict()["param_groups"]
        scaler = {k: v for k, v in t.scaler.state_dict().items() if k not in scaling.COUNTERS}
        return cls(
            params={name: (tuple(p.shape), p.dtype) for name, p in t.model.state_dict().items()},
            groups=[g["params"] for g in groups],
            moments=[(tuple(p.shape), p.dtype) for g in t.optimizer.param_groups for p in g["params"]],
            hyper={
                OPTIMIZER: {k: v for k, v in groups[0].items() if k not in counters},
                SCHEDULER: {k: v for k, v in t.scheduler.state_dict().items() if k not in counters and k[0] != "_"},
                **({SCALER: scaler} if t.has_scaler else {}),  # growth and backoff factors, growth interval
            },
            config=config,
            identity=identity,
            generators=t.generators,
            order=t.order,
            rows_per_step=rows_per_step,
            pivot=pivot,
            scaler=t.has_scaler,
            # Plain SGD may keep nothing per parameter; every other torch optimizer keeps moments or steps.
            optimizer_keeps_state=not isinstance(t.optimizer, torch.optim.SGD),
        )


def validate(path: Path, state: dict[str, Any], expected: Expected, accept_foreign: bool = False) -> list[str]:
    """Refuse (CheckpointError, one line) what this run cannot resume; return the accepted identity differences."""
    try:
        _check_sections(state, expected)
        _check_instant(state, expected)
        _check_experiment(state, expected)
        return _check_identity(state, expected, accept_foreign)
    except (_Refused, OrderStateError, GeneratorStateError) as err:
        raise CheckpointError(f"{path}: {err}; refusing to resume".replace("\n", " ")) from None


class _Refused(Exception):
    pass


_SHORT = reprlib.Repr()
_SHORT.maxstring = _SHORT.maxother = 80  # a sha256 hex digest still shows whole


def _show(value: Any) -> str:
    """A short one-line rendering of a value found in a checkpoint, for messages."""
    if isinstance(value, torch.Tensor):
        if value.numel() == 1:
            return repr(value.item())
        return f"tensor({str(value.dtype).removeprefix('torch.')}, {list(value.shape)})"
    return _SHORT.repr(value)


def _tensor(where: str, value: Any, shape: tuple[int, ...], dtype: torch.dtype) -> None:
    if not isinstance(value, torch.Tensor):
        raise _Refused(f"{where} is a {type(value).__name__}, expected a tensor")
    if tuple(value.shape) != shape or value.dtype != dtype:
        raise _Refused(f"{where} is {value.dtype} {list(value.shape)}, expected {dtype} {list(shape)}")


def _check_sections(state: dict[str, Any], expected: Expected) -> None:
    missing = REQUIRED_KEYS - state.keys()
    if missing:
        raise _Refused(f"missing {', '.join(sorted(missing))}")
    if state[FORMAT_KEY] != FORMAT:
        raise _Refused(f"format is {_show(state[FORMAT_KEY])}, expected {FORMAT!r}")
    for key in SECTIONS:
        if not isinstance(state.get(key, {}), dict):
            raise _Refused(f"{key} is a {type(state[key]).__name__}, expected a dict")
    if set(state[MODEL]) != set(expected.params):
        raise _Refused(f"model holds {sorted(state[MODEL])}, expected {sorted(expected.params)}")
    for name, (shape, dtype) in expected.params.items():
        _tensor(f"model.{name}", state[MODEL][name], shape, dtype)
    _check_optimizer(state[OPTIMIZER], expected)
    expected.generators.check(state[RNG])  # into scratch generators: refused now, not mid-resume
    expected.order.check(state[DATA])
    if not is_int(state[PROGRESS].get("step")) or state[PROGRESS]["step"] < 0:
        raise _Refused("progress.step must be a non-negative int")
    if not isinstance(state[HISTORY], list) or not all(isinstance(r, dict) for r in state[HISTORY]):
        raise _Refused("history must be a list of records")
    if not is_int(state[SCHEDULER].get("last_epoch")):
        raise _Refused("scheduler.last_epoch must be an int")
    if not isinstance(state.get(PROVENANCE, []), list):
        raise _Refused("provenance must be a list")
    _check_scaler(state, expected)


def _check_scaler(state: dict[str, Any], expected: Expected) -> None:
    """The GradScaler's state where the run has one, and none where it has none (it would be dropped unseen)."""
    if not expected.scaler:
        if SCALER in state:
            raise _Refused("scaler: holds a GradScaler's state, and this run has no GradScaler (no fp16 AMP)")
        return
    if SCALER not in state:
        raise _Refused(f"missing {SCALER} (this run has a GradScaler: fp16 mixed precision)")
    problem = scaling.problem(state[SCALER], _show)
    if problem:
        raise _Refused(problem)


def _check_optimizer(optimizer: dict[str, Any], expected: Expected) -> None:
    groups, per_param = optimizer.get("param_groups"), optimizer.get("state")
    if not (isinstance(groups, list) and all(isinstance(g, dict) for g in groups)):
        raise _Refused("optimizer.param_groups must be a list of dicts")
    listed = [g.get("params") for g in groups]
    if listed != expected.groups:
        raise _Refused(f"optimizer param groups list params {_show(listed)}, expected {expected.groups}")
    if not (isinstance(per_param, dict) and all(isinstance(m, dict) for m in per_param.values())):
        raise _Refused("optimizer.state must map each parameter index to a dict")
    count = len(expected.moments)
    if per_param and set(per_param) != set(range(count)):
        raise _Refused(f"optimizer state covers params {sorted(per_param)}, expected 0..{count - 1}")
    for index, moments in per_param.items():
        for name, value in moments.items():
            if isinstance(value, torch.Tensor) and value.dim() > 0:  # moments have the parameter's geometry
                _tensor(f"optimizer.state.{index}.{name}", value, *expected.moments[index])


def _check_instant(state: dict[str, Any], expected: Expected) -> None:
    """Every counter must describe the same instant, or the file was stitched from several."""
    step, history = state[PROGRESS]["step"], state[HISTORY]
    if [record.get("step") for record in history] != list(range(1, step + 1)):
        raise _Refused(f"history does not hold exactly the records of steps 1..{step}")
    if state[SCHEDULER]["last_epoch"] != step:
        raise _Refused(f"scheduler.last_epoch is {state[SCHEDULER]['last_epoch']}, progress.step is {step}")
    # A GradScaler skips the optimizer's step when a gradient overflowed (and lowers the scale): the optimizer's
    # count may then trail the updates, never pass them, and be empty if every update so far was skipped.
    skips = expected.scaler
    for index, moments in state[OPTIMIZER]["state"].items():
        counted = moments.get("step")
        value = counted.item() if isinstance(counted, torch.Tensor) and counted.numel() == 1 else counted
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if counted is not None and not (number and (value == step or (skips and 0 <= value < step))):
            raise _Refused(f"optimizer.state.{index}.step is {_show(counted)}, progress.step is {step}")
    if step and not state[OPTIMIZER]["state"] and expected.optimizer_keeps_state and not skips:
        raise _Refused(f"optimizer state is empty after {step} updates")
    data = state[DATA]
    if data["epoch"] * expected.order.rows + data["cursor"] != step * expected.rows_per_step:
        raise _Refused(f"data position (epoch {data['epoch']}, cursor {data['cursor']}) is not where step {step} ends")


def _check_experiment(state: dict[str, Any], expected: Expected) -> None:
    config = state[CONFIG]
    if not all(isinstance(value, int | float | str | bool | None) for value in config.values()):
        raise _Refused("config values must be numbers, strings, booleans or null")
    keys = (expected.config.keys() | config.keys()) - expected.pivot
    differing = sorted(key for key in keys if config.get(key) != expected.config.get(key))
    if differing:
        pairs = ", ".join(f"{k}={_show(config.get(k))} (now {_show(expected.config.get(k))})" for k in differing)
        raise _Refused(f"written by another experiment: {pairs}")
    # Betas, eps, initial lr, step size, gamma...: restoring them unchecked would let a checkpoint
    # quietly change the experiment.
    found = {OPTIMIZER: state[OPTIMIZER]["param_groups"][0], SCHEDULER: state[SCHEDULER], SCALER: state.get(SCALER)}
    for section, constants in expected.hyper.items():
        for key, value in constants.items():
            saved = found[section].get(key)
            if key not in expected.pivot and saved != value:
                raise _Refused(f"{section} {key} is {_show(saved)}, this experiment has {_show(value)}")


def _check_identity(state: dict[str, Any], expected: Expected, accept_foreign: bool) -> list[str]:
    recorded = {**state.get(IDENTITY, {}), **state.get(VERSIONS, {})}
    current = {**expected.identity, **versions()}
    differences = [
        f"{key}: checkpoint {_show(recorded.get(key))}, current {_show(value)}"
        for key, value in current.items()
        if recorded.get(key) != value
    ]
    if differences and not accept_foreign:
        raise _Refused(f"{differences[0]} (pass --override-identity to resume anyway)")
    return differences
