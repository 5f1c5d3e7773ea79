"""Pickles that call allowlisted functions with seeded arguments: the argument checks, fuzzed."""

import collections
import io
import random
import warnings
from typing import Any

import torch


class Call:
    """Pickles as func(*args), as a hand-made file could, with real storages as persistent ids."""

    def __init__(self, func: Any, args: tuple) -> None:
        self.func, self.args = func, args

    def __reduce__(self) -> tuple:
        return self.func, self.args


FUNCS = (
    torch._utils._rebuild_tensor_v2,
    torch._utils._rebuild_tensor_v2,
    torch._utils._rebuild_tensor_v3,
    torch._utils._rebuild_parameter,
    torch._utils._rebuild_parameter_with_state,
    torch._utils._rebuild_tensor,
    torch._utils._rebuild_qtensor,
    torch._tensor._rebuild_from_type_v2,
    collections.OrderedDict,
    collections.Counter,
    torch.Size,
    torch.device,
    set,
    complex,
    bytearray,
    torch.serialization._get_layout,
    torch.Tensor,
    torch.nn.Parameter,
    torch._utils._rebuild_meta_tensor_no_storage,
    torch._utils._rebuild_sparse_tensor,
)


def _storage(rng: random.Random) -> Any:
    dtype = rng.choice((torch.float32, torch.float64, torch.int64, torch.uint8, torch.complex64))
    t = torch.zeros(rng.randint(0, 6), dtype=dtype)
    if rng.random() < 0.3:
        return t.untyped_storage()
    return torch.storage.TypedStorage(wrap_storage=t.untyped_storage(), dtype=dtype, _internal=True)


def _arg(rng: random.Random, storage: Any) -> Any:
    return rng.choice(
        (
            lambda: storage,
            lambda: storage,
            lambda: rng.choice((0, 1, 2, 5, -1, 2**62, 2**63, 2**64, True)),
            lambda: tuple(rng.choice((0, 1, 2, 3, 6, -1, 2**63)) for _ in range(rng.randint(0, 3))),
            lambda: [1, 2],
            lambda: torch.Size([2]),
            lambda: rng.choice((True, False, 1, None)),
            lambda: collections.OrderedDict(),
            lambda: {},
            lambda: {"conj": True},
            lambda: {"neg": True},
            lambda: {"foo": 1},
            lambda: rng.choice((torch.float32, torch.uint16, torch.qint8, torch.int4)),
            lambda: "cpu",
            lambda: "latin1",
            lambda: "torch.strided",
            lambda: 1.5,
            lambda: b"ab",
            lambda: torch.zeros(2),
            lambda: torch.nn.Parameter(torch.zeros(2)),
            lambda: ("cpu", 0),
        )
    )()


def _metadata(rng: random.Random) -> Any:
    return rng.choice(
        (
            {"conj": True},
            {"neg": True},
            {"conj": True, "neg": True},
            {"neg": False},
            {},
            None,
            {"conj": 1},
            {"requires_grad": True},
        )
    )


def call_pickle(rng: random.Random) -> Any:
    """An object whose torch.save writes one or more allowlisted calls with plausible or wrong arguments."""
    storage = _storage(rng)
    func = rng.choice(FUNCS)
    good = (storage, 0, (1,), (1,), False, collections.OrderedDict())
    if func is torch._utils._rebuild_tensor_v2 and rng.random() < 0.6:
        args = list(good) + ([_metadata(rng)] if rng.random() < 0.3 else [])
        args[rng.randrange(6)] = _arg(rng, storage)
        args = args[: rng.choice((4, 5, 6, 6, 6, 7, 7, 8, 9))]
        while len(args) < 6 and rng.random() < 0.5:
            args.append(_arg(rng, storage))
    elif func is torch._utils._rebuild_tensor_v3 and rng.random() < 0.7:
        untyped = torch.zeros(rng.randint(0, 16), dtype=torch.uint8).untyped_storage()
        dtype = rng.choice(
            (
                torch.uint16,
                torch.uint32,
                torch.uint64,
                torch.complex32,
                torch.float8_e5m2,
                torch.bits16,
                torch.float32,
                torch.int4,
                torch.qint8,
            )
        )
        args = [
            untyped,
            rng.choice((0, 1, 3)),
            (rng.randint(0, 5),),
            (rng.choice((0, 1, 2)),),
            rng.random() < 0.3,
            collections.OrderedDict(),
            dtype,
        ] + ([_metadata(rng)] if rng.random() < 0.4 else [])
        if rng.random() < 0.5:
            args[rng.randrange(len(args))] = _arg(rng, untyped)
    elif func is torch._utils._rebuild_tensor_v2 and rng.random() < 0.5:  # empty tensors, offsets anywhere
        size = rng.choice(((0,), (2, 0), (0, 3), (2**62, 0), (2**63, 0)))
        offset = rng.choice((0, 1, 5, 2**40, 2**59, 2**61, 2**62, 2**63 - 1, 2**63))
        args = [storage, offset, size, (1,) * len(size), rng.random() < 0.2, collections.OrderedDict()]
    elif func is torch._utils._rebuild_parameter and rng.random() < 0.7:
        data = rng.choice(
            (
                lambda: torch.zeros(2, dtype=torch.complex64).conj(),
                lambda: torch.zeros(2, dtype=torch.complex64).conj().imag,
                lambda: torch.zeros(3, 1).expand(3, 4),
                lambda: torch.zeros(0, 2),
                lambda: torch.zeros(2, 3).t(),
                lambda: Call(
                    torch._utils._rebuild_tensor_v3,
                    (
                        torch.zeros(4, dtype=torch.uint8).untyped_storage(),
                        0,
                        (2,),
                        (1,),
                        False,
                        collections.OrderedDict(),
                        torch.float8_e5m2,
                    ),
                ),
                lambda: torch.zeros(2, dtype=torch.float16),
                lambda: torch.zeros(2, dtype=torch.int64),
            )
        )()
        args = [data, rng.random() < 0.7, collections.OrderedDict()]
    else:
        args = [_arg(rng, storage) for _ in range(rng.randint(0, 8))]
    return {"x": Call(func, tuple(args)), "also": storage if rng.random() < 0.3 else None}


def saved(obj: Any) -> bytes | None:
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            torch.save(obj, buffer)
        except Exception:  # torch.save itself refuses some combinations: no case then
            return None
    return buffer.getvalue()
