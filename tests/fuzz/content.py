"""Random content torch.save writes and torch.load(weights_only=True) loads: what must never be a false alarm."""

import collections
import random
import warnings
from typing import Any

import torch

V2_DTYPES = (
    torch.float64,
    torch.float32,
    torch.float16,
    torch.bfloat16,
    torch.int64,
    torch.int32,
    torch.int16,
    torch.int8,
    torch.uint8,
    torch.bool,
    torch.complex128,
    torch.complex64,
)
V3_DTYPES = (
    torch.uint16,
    torch.uint32,
    torch.uint64,
    torch.complex32,
    torch.bits8,
    torch.bits16,
    torch.bits1x8,
    torch.bits2x4,
    torch.bits4x2,
    torch.float8_e4m3fn,
    torch.float8_e4m3fnuz,
    torch.float8_e5m2,
    torch.float8_e5m2fnuz,
    torch.float8_e8m0fnu,
    torch.float4_e2m1fn_x2,
)
DTYPES = V2_DTYPES + V3_DTYPES
DEVICES = (
    torch.device("cpu"),
    torch.device("cuda", 0),
    torch.device("cuda"),
    torch.device("meta"),
    torch.device("mps"),
)
LAYOUTS = (torch.strided, torch.sparse_coo, torch.sparse_csr, torch._mkldnn, torch.jagged)  # type: ignore[attr-defined]
QSCHEMES = (torch.per_tensor_affine, torch.per_channel_symmetric)
CLASSES = (torch.FloatTensor, torch.Tensor, torch.nn.Parameter, torch.FloatStorage)


def content(rng: random.Random) -> Any:
    """A random nested value of allowed content, 0 to about 40 tensors."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # TypedStorage and ComplexHalf warn
        return _value(rng, depth=rng.randint(0, 4), shared=[])


def _value(rng: random.Random, depth: int, shared: list[Any]) -> Any:
    if shared and rng.random() < 0.08:
        return rng.choice(shared)  # the same object twice: memo references
    makers = _LEAVES if depth <= 0 else _LEAVES + _CONTAINERS * 3
    value = rng.choice(makers)(rng, depth - 1, shared)
    if isinstance(value, torch.Tensor | list | dict):
        shared.append(value)
    return value


def _tensor(rng: random.Random, depth: int, shared: list[Any]) -> torch.Tensor:
    dtype = rng.choice(DTYPES)
    shape = [rng.randint(0, 4) for _ in range(rng.choice((0, 1, 1, 2, 3)))]
    return _view(rng, torch.zeros(shape, dtype=dtype) if dtype in V2_DTYPES else _raw(shape, dtype))


def _raw(shape: list[int], dtype: torch.dtype) -> torch.Tensor:
    count = 1
    for n in shape:
        count *= n
    return torch.zeros(count * dtype.itemsize, dtype=torch.uint8).view(dtype).reshape(shape)


def _view(rng: random.Random, t: torch.Tensor) -> torch.Tensor:
    roll = rng.random()
    if t.dim() >= 2 and roll < 0.2:
        return t.transpose(0, 1)
    if t.dim() >= 1 and t.shape[0] > 1 and roll < 0.35:
        return t[1:]
    if t.dim() >= 1 and roll < 0.45:
        return t[::2]
    if t.dim() == 1 and t.shape[0] == 1 and roll < 0.55:
        return t.expand(3)  # stride 0
    if t.dtype in (torch.complex64, torch.complex128) and roll < 0.7:
        return t.conj() if rng.random() < 0.5 else t.conj().imag  # conj and neg metadata
    if t.is_floating_point() and t.dtype in V2_DTYPES and roll < 0.8:
        return t.clone().requires_grad_()
    return t


def _parameter(rng: random.Random, depth: int, shared: list[Any]) -> torch.nn.Parameter:
    dtype = rng.choice(
        (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.complex64, torch.float8_e5m2)
    )
    data = torch.zeros(rng.randint(0, 3), rng.randint(1, 3), dtype=dtype) if dtype in V2_DTYPES else _raw([2, 2], dtype)
    if rng.random() < 0.4:
        data = data.conj() if dtype == torch.complex64 else data.transpose(0, 1)
    return torch.nn.Parameter(data, rng.random() < 0.8)


def _storage(rng: random.Random, depth: int, shared: list[Any]) -> Any:
    t = torch.zeros(rng.randint(0, 5), dtype=rng.choice(V2_DTYPES))
    return (
        t.untyped_storage()
        if rng.random() < 0.5
        else torch.storage.TypedStorage(wrap_storage=t.untyped_storage(), dtype=t.dtype, _internal=True)
    )


def _scalar(rng: random.Random, depth: int, shared: list[Any]) -> Any:
    return rng.choice(
        (
            None,
            True,
            False,
            0,
            255,
            256,
            65535,
            65536,
            -1,
            2**31 - 1,
            -(2**31),
            2**31,
            2**63,
            -(2**70),
            7**90,
            0.0,
            -1.5,
            float("inf"),
            float("nan"),
            1e308,
            "",
            "text",
            "ünïcödé ✓",
            "\udcff",
            "x" * 300,
        )
    )


def _small_torch(rng: random.Random, depth: int, shared: list[Any]) -> Any:
    return rng.choice(
        (
            lambda: torch.Size([rng.randint(0, 9) for _ in range(rng.randint(0, 4))]),
            lambda: rng.choice(DTYPES),
            lambda: rng.choice(DEVICES),
            lambda: rng.choice(LAYOUTS),
            lambda: rng.choice(QSCHEMES),
            lambda: rng.choice(CLASSES),
            lambda: complex(rng.uniform(-9, 9), rng.uniform(-9, 9)),
            lambda: bytes(rng.randrange(256) for _ in range(rng.randint(1, 20))),
            lambda: bytearray(bytes(rng.randrange(256) for _ in range(rng.randint(0, 20)))),
        )
    )()


def _list(rng: random.Random, depth: int, shared: list[Any]) -> list:
    return [_value(rng, depth, shared) for _ in range(rng.randint(0, 5))]


def _tuple(rng: random.Random, depth: int, shared: list[Any]) -> tuple:
    return tuple(_value(rng, depth, shared) for _ in range(rng.randint(0, 4)))


def _key(rng: random.Random) -> Any:
    return rng.choice((f"k{rng.randint(0, 99)}", rng.randint(-5, 99), (1, "a"), None, 2.5, torch.float32))


def _dict(rng: random.Random, depth: int, shared: list[Any]) -> Any:
    kind = rng.choice((dict, dict, collections.OrderedDict, collections.Counter))
    result = kind({_key(rng): _value(rng, depth, shared) for _ in range(rng.randint(0, 5))})
    if kind is collections.OrderedDict and rng.random() < 0.3:
        result._metadata = {"": {"version": 1}}  # type: ignore[attr-defined]  # as state_dict() sets it
    return result


def _set(rng: random.Random, depth: int, shared: list[Any]) -> set:
    """Pickled in hash order: only keys whose hash is the same in every process (not None, not a dtype,
    hashed by address on Python 3.11)."""
    keys = [_key(rng) for _ in range(rng.randint(0, 5))]
    return {k for k in keys if k is not None and not isinstance(k, torch.dtype)}


def _state_dict(rng: random.Random, depth: int, shared: list[Any]) -> Any:
    model = torch.nn.Sequential(torch.nn.Linear(2, rng.randint(1, 4)), torch.nn.BatchNorm1d(1 + rng.randint(0, 3)))
    return model.state_dict() if rng.random() < 0.5 else {"model": model.state_dict(), "step": rng.randint(0, 9)}


_LEAVES = [_tensor, _tensor, _parameter, _storage, _scalar, _scalar, _small_torch]
_CONTAINERS = [_list, _tuple, _dict, _set, _state_dict]
