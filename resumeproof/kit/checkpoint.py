"""The checkpoint: one resume point, written atomically with its fingerprint, loaded only after checks.

"Checkpoint" here means a resume point (every state that decides the next updates), not
activation checkpointing. It holds only containers, primitives, strings and tensors, and the
only way this project loads one is `torch.load(..., map_location="cpu", weights_only=True)`.
"""

import io
import pickle
import reprlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeGuard

import torch

from resumeproof.common import fingerprint
from resumeproof.kit import rng
from resumeproof.verify import weights_only

FORMAT = "resumeproof-checkpoint/1"
# The keys, named once: the trainer's capture and restore and the checks below all use these.
FORMAT_KEY, MODEL, OPTIMIZER, SCHEDULER, RNG = "format", "model", "optimizer", "scheduler", "rng"
DATA, PROGRESS, HISTORY, CONFIG, VERSIONS, IDENTITY = "data", "progress", "history", "config", "versions", "identity"
PROVENANCE = "provenance"  # optional: the deliberate pivots the run went through, oldest first
REQUIRED_KEYS = frozenset(
    {FORMAT_KEY, MODEL, OPTIMIZER, SCHEDULER, RNG, DATA, PROGRESS, HISTORY, CONFIG, VERSIONS, IDENTITY}
)
SECTIONS = (MODEL, OPTIMIZER, SCHEDULER, RNG, DATA, PROGRESS, CONFIG, VERSIONS, IDENTITY)  # dicts
MAX_BYTES = 1 << 30  # far above any model this trainer builds; a larger file is not ours
TORCH_RNG_BYTES = torch.get_rng_state().numel()
PYTHON_RNG_WORDS = 625


class CheckpointError(Exception):
    """A checkpoint cannot be written, or is refused for resuming."""


@dataclass(frozen=True, kw_only=True)
class Expected:
    """What a checkpoint must match to be resumed by the current trainer."""

    params: dict[str, tuple[int, ...]]  # model state_dict names and shapes
    hyper: dict[str, dict[str, Any]]  # per section, the constants a freshly built object holds
    config: dict[str, Any]  # must be equal: another experiment is never resumed
    identity: dict[str, str]  # code and data sha256: different only with an explicit override
    versions: dict[str, str]  # python, torch, numpy: likewise
    pivot: frozenset[str] = frozenset()  # config and hyper-parameter keys a declared pivot changes
    rows: int
    batch: int


def save(path: Path, state: dict[str, Any]) -> str:
    """Write `state` to `path` and `path.sha256`; return the sha256 of the bytes on disk."""
    try:
        # The sidecar goes first: a checkpoint never appears under its name without its fingerprint,
        # whatever instant a kill chooses (a sidecar without its file is an orphan, and harmless).
        digest = fingerprint.write_atomic(
            path,
            lambda f: torch.save(state, f),
            check=lambda tmp: _verify_written(path, tmp),
            before_rename=lambda digest: fingerprint.write_sidecar(path, digest),
        )
    except OSError as err:
        raise CheckpointError(f"{path}: could not write checkpoint ({err})") from None
    return digest


def _verify_written(path: Path, tmp: Path) -> None:
    """The file read back is what torch.save meant to write, and holds only what weights_only loads.
    The torch-free check verifies every record's CRC32 (one pass over the bytes), every record and
    data.pkl; then the real loader reads it too, a second authority, with mmap so that the storages
    are mapped rather than read again (2 ms for 240 MB, against 45 ms or more without). Resuming
    always goes through the real loader."""
    try:
        weights_only.check(tmp)
    except weights_only.WeightsOnlyError as err:
        reason = str(err).replace(f"{tmp}: ", "")
        raise CheckpointError(f"{path}: refusing to write it: {reason}") from None
    try:
        torch.load(tmp, map_location="cpu", weights_only=True, mmap=True)
    except Exception as err:  # the loader raises many types on what it refuses; all are refusals
        raise CheckpointError(f"{path}: refusing to write it: torch.load(weights_only=True) refuses it"
                              f" ({type(err).__name__})") from None  # fmt: skip


def load(path: Path, expected: Expected, override: bool = False) -> tuple[dict[str, Any], list[str]]:
    """Read and validate a checkpoint; return it with the identity differences an override accepted."""
    if not path.is_file():
        raise CheckpointError(f"{path}: no such checkpoint file")
    size = path.stat().st_size
    if not 0 < size <= MAX_BYTES:
        raise CheckpointError(f"{path}: size {size} bytes is outside 1..{MAX_BYTES}; refusing to resume")
    data = path.read_bytes()
    try:
        fingerprint.verify(path, data)
    except fingerprint.FingerprintError as err:
        raise CheckpointError(f"{err}; refusing to resume") from None
    state = _unpickle(path, data)
    _check_schema(path, state, expected)
    _check_progress(path, state, expected)
    _check_config(path, state[CONFIG], expected.config, expected.pivot)
    _check_hyperparameters(path, state, expected.hyper, expected.pivot)
    if not isinstance(state.get(PROVENANCE, []), list):
        raise _fail(path, "provenance must be a list")
    return state, _check_identity(path, state, expected, override)


def _unpickle(path: Path, data: bytes) -> dict[str, Any]:
    try:
        state = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as err:
        lines = [line.strip() for line in str(err).splitlines() if "Unpickler error:" in line]
        reason = lines[0].split("error:", 1)[1].strip() if lines else str(err).strip()[:200]
        raise CheckpointError(f"{path}: refused by the weights_only loader ({reason})") from None
    except Exception as err:  # the loader raises many types on malformed input; all are refusals
        raise CheckpointError(f"{path}: not a readable torch checkpoint ({type(err).__name__}: {err})") from None
    if not isinstance(state, dict):
        raise CheckpointError(f"{path}: holds a {type(state).__name__}, expected a dict")
    return state


def _fail(path: Path, problem: str) -> CheckpointError:
    return CheckpointError(f"{path}: {problem}; refusing to resume".replace("\n", " "))


_SHORT = reprlib.Repr()
_SHORT.maxstring = _SHORT.maxother = 80  # a sha256 hex digest still shows whole


def _show(value: Any) -> str:
    """A short one-line rendering of a value found in a checkpoint, for messages."""
    if isinstance(value, torch.Tensor):
        if value.numel() == 1:
            return repr(value.item())
        return f"tensor({str(value.dtype).removeprefix('torch.')}, {list(value.shape)})"
    return _SHORT.repr(value)


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _tensor(path: Path, where: str, value: Any, shape: tuple[int, ...], dtype: torch.dtype) -> None:
    if not isinstance(value, torch.Tensor):
        raise _fail(path, f"{where} is a {type(value).__name__}, expected a tensor")
    if tuple(value.shape) != shape or value.dtype != dtype:
        raise _fail(path, f"{where} is {value.dtype} {list(value.shape)}, expected {dtype} {list(shape)}")


def _check_schema(path: Path, state: dict[str, Any], expected: Expected) -> None:
    missing = REQUIRED_KEYS - state.keys()
    if missing:
        raise _fail(path, f"missing {', '.join(sorted(missing))}")
    if state[FORMAT_KEY] != FORMAT:
        raise _fail(path, f"format is {state[FORMAT_KEY]!r}, expected {FORMAT!r}")
    for key in SECTIONS:
        if not isinstance(state[key], dict):
            raise _fail(path, f"{key} is a {type(state[key]).__name__}, expected a dict")
    model = state[MODEL]
    if set(model) != set(expected.params):
        raise _fail(path, f"model holds {sorted(model)}, expected {sorted(expected.params)}")
    for name, shape in expected.params.items():
        _tensor(path, f"model.{name}", model[name], shape, torch.float64)
    _check_optimizer(path, state[OPTIMIZER], list(expected.params.values()))
    _check_rng(path, state[RNG])
    _check_data(path, state[DATA], expected.rows)
    if not _is_int(state[PROGRESS].get("step")) or state[PROGRESS]["step"] < 0:
        raise _fail(path, "progress.step must be a non-negative int")
    if not isinstance(state[HISTORY], list) or not all(isinstance(r, dict) for r in state[HISTORY]):
        raise _fail(path, "history must be a list of records")
    if not _is_int(state[SCHEDULER].get("last_epoch")):
        raise _fail(path, "scheduler.last_epoch must be an int")


def _check_optimizer(path: Path, optimizer: dict[str, Any], shapes: list[tuple[int, ...]]) -> None:
    groups, per_param = optimizer.get("param_groups"), optimizer.get("state")
    if not (isinstance(groups, list) and len(groups) == 1 and isinstance(groups[0], dict)):
        raise _fail(path, "optimizer.param_groups must be a list of exactly one dict")
    if not (isinstance(per_param, dict) and all(isinstance(m, dict) for m in per_param.values())):
        raise _fail(path, "optimizer.state must map each parameter index to a dict")
    if groups[0].get("params") != list(range(len(shapes))):
        raise _fail(path, f"optimizer param group must list params 0..{len(shapes) - 1}")
    if per_param and set(per_param) != set(range(len(shapes))):
        raise _fail(path, f"optimizer state covers params {sorted(per_param)}, expected 0..{len(shapes) - 1}")
    for index, moments in per_param.items():
        for name in ("exp_avg", "exp_avg_sq"):
            _tensor(path, f"optimizer.state.{index}.{name}", moments.get(name), shapes[index], torch.float64)


def _check_rng(path: Path, state: dict[str, Any]) -> None:
    if set(state) != set(rng.NAMES):
        raise _fail(path, f"rng holds {sorted(state)}, expected {sorted(rng.NAMES)}")
    py = state[rng.PYTHON]
    if not isinstance(py, dict) or not _is_int(py.get("version")):
        raise _fail(path, "rng.python must hold an int version")
    _tensor(path, "rng.python.internal", py.get("internal"), (PYTHON_RNG_WORDS,), torch.int64)
    numpy_state = state[rng.NUMPY]
    if not isinstance(numpy_state, dict) or numpy_state.get("bit_generator") != "PCG64":
        raise _fail(path, "rng.numpy must be a PCG64 state")
    _tensor(path, "rng.torch", state[rng.TORCH], (TORCH_RNG_BYTES,), torch.uint8)
    try:  # into scratch generators: a state the generators would reject is refused now, not mid-resume
        rng.Generators.scratch().restore(state)
    except (KeyError, TypeError, ValueError, OverflowError, RuntimeError, AttributeError) as err:
        raise _fail(path, f"rng state cannot be restored ({type(err).__name__}: {err})") from None


def _check_data(path: Path, data: dict[str, Any], rows: int) -> None:
    _tensor(path, "data.permutation", data.get("permutation"), (rows,), torch.int64)
    if sorted(data["permutation"].tolist()) != list(range(rows)):
        raise _fail(path, f"data.permutation is not a permutation of 0..{rows - 1}")
    cursor, epoch = data.get("cursor"), data.get("epoch")
    if not (_is_int(cursor) and 0 <= cursor <= rows and _is_int(epoch) and epoch >= 0):
        raise _fail(path, f"data.cursor must be an int in 0..{rows} and data.epoch an int >= 0")


def _check_progress(path: Path, state: dict[str, Any], expected: Expected) -> None:
    """Every counter must describe the same instant, or the file was stitched from several."""
    step, history = state[PROGRESS]["step"], state[HISTORY]
    if [record.get("step") for record in history] != list(range(1, step + 1)):
        raise _fail(path, f"history does not hold exactly the records of steps 1..{step}")
    if state[SCHEDULER]["last_epoch"] != step:
        raise _fail(path, f"scheduler.last_epoch is {state[SCHEDULER]['last_epoch']}, progress.step is {step}")
    for index, moments in state[OPTIMIZER]["state"].items():
        counted = moments.get("step")
        if not isinstance(counted, torch.Tensor) or counted.numel() != 1 or counted.item() != step:
            raise _fail(path, f"optimizer.state.{index}.step is {_show(counted)}, progress.step is {step}")
    if step and not state[OPTIMIZER]["state"]:
        raise _fail(path, f"optimizer state is empty after {step} updates")
    data = state[DATA]
    if data["epoch"] * expected.rows + data["cursor"] != step * expected.batch:
        raise _fail(
            path, f"data position (epoch {data['epoch']}, cursor {data['cursor']}) is not where step {step} ends"
        )


def _check_config(path: Path, config: dict[str, Any], expected: dict[str, Any], pivot: frozenset[str]) -> None:
    if not all(isinstance(value, int | float | str | bool | None) for value in config.values()):
        raise _fail(path, "config values must be numbers, strings, booleans or null")
    keys = (expected.keys() | config.keys()) - pivot
    differing = sorted(key for key in keys if config.get(key) != expected.get(key))
    if differing:
        pairs = ", ".join(f"{key}={_show(config.get(key))} (now {_show(expected.get(key))})" for key in differing)
        raise _fail(path, f"written by another experiment: {pairs}")


def _check_hyperparameters(
    path: Path, state: dict[str, Any], hyper: dict[str, dict[str, Any]], pivot: frozenset[str]
) -> None:
    """Betas, eps, initial lr, step size, gamma...: what a fresh optimizer and scheduler would hold.
    Restoring them unchecked would let a checkpoint quietly change the experiment."""
    found = {OPTIMIZER: state[OPTIMIZER]["param_groups"][0], SCHEDULER: state[SCHEDULER]}
    for section, constants in hyper.items():
        for key, value in constants.items():
            if key not in pivot and found[section].get(key) != value:
                raise _fail(
                    path, f"{section} {key} is {_show(found[section].get(key))}, this experiment has {_show(value)}"
                )


def _check_identity(path: Path, state: dict[str, Any], expected: Expected, override: bool) -> list[str]:
    recorded = {**state[IDENTITY], **state[VERSIONS]}
    current = {**expected.identity, **expected.versions}
    differences = [
        f"{key}: checkpoint {_show(recorded.get(key))}, current {_show(value)}"
        for key, value in current.items()
        if recorded.get(key) != value
    ]
    if differences and not override:
        raise _fail(path, f"{differences[0]} (pass --override-identity to resume anyway)")
    return differences
