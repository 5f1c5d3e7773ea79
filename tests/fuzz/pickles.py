"""Pickle streams written by hand, and seeded mutations of the data.pkl torch.save writes."""

import os
import pickle
import pickletools
import random
import struct
from collections.abc import Callable
from typing import Any


class P:
    """Opcode encoders, so that a hand-written pickle reads like the opcodes it holds."""

    @staticmethod
    def op(name: str) -> bytes:
        return getattr(pickle, name)

    @staticmethod
    def proto(version: int = 2) -> bytes:
        return pickle.PROTO + bytes([version])

    @staticmethod
    def global_(module: str, name: str) -> bytes:
        return pickle.GLOBAL + f"{module}\n{name}\n".encode()

    @staticmethod
    def str(text: str) -> bytes:
        data = text.encode("utf-8", "surrogatepass")
        return pickle.BINUNICODE + struct.pack("<I", len(data)) + data

    @staticmethod
    def int(value: int) -> bytes:
        if 0 <= value < 256:
            return pickle.BININT1 + bytes([value])
        if 0 <= value < 65536:
            return pickle.BININT2 + struct.pack("<H", value)
        if -(2**31) <= value < 2**31:
            return pickle.BININT + struct.pack("<i", value)
        data = pickle.encode_long(value)  # type: ignore[attr-defined]
        return pickle.LONG1 + bytes([len(data)]) + data

    @staticmethod
    def mark() -> bytes:
        return pickle.MARK

    @staticmethod
    def put(index: int) -> bytes:
        return pickle.BINPUT + bytes([index]) if index < 256 else pickle.LONG_BINPUT + struct.pack("<I", index)

    @staticmethod
    def get(index: int) -> bytes:
        return pickle.BINGET + bytes([index]) if index < 256 else pickle.LONG_BINGET + struct.pack("<I", index)

    @staticmethod
    def ints_tuple(*values: int) -> bytes:
        return pickle.MARK + b"".join(P.int(v) for v in values) + pickle.TUPLE

    @staticmethod
    def long_tuple(*values: int) -> bytes:
        return P.ints_tuple(*values)


class RunsCode:
    """Unpickling this calls `func(arg)`: what a malicious checkpoint would do."""

    def __init__(self, func: Callable[[str], object], arg: str) -> None:
        self.func, self.arg = func, arg

    def __reduce__(self) -> tuple[Any, ...]:
        return self.func, (self.arg,)


def runs_code(how: str, marker: str) -> RunsCode:
    """An object whose unpickling creates `marker` through `how` (os.system, builtins.exec, ...)."""
    import builtins
    import subprocess

    funcs: dict[str, tuple[Callable[[str], object], str]] = {
        "os.system": (os.system, f"touch '{marker}'"),
        "builtins.exec": (builtins.exec, f"open({marker!r}, 'w')"),
        "builtins.eval": (builtins.eval, f"open({marker!r}, 'w')"),
        "subprocess.getoutput": (subprocess.getoutput, f"touch '{marker}'"),
    }
    return RunsCode(*funcs[how])


def marker_payload(how: str, marker: str, protocol: int = 2) -> bytes:
    """A pickle that creates `marker` when loaded by anything that runs what it names."""
    return pickle.dumps({"model": runs_code(how, marker)}, protocol=protocol)


# Single opcodes and short sequences inserted at random points of a valid stream.
SNIPPETS = [
    P.op(name)
    for name in (
        "EMPTY_LIST",
        "EMPTY_DICT",
        "EMPTY_TUPLE",
        "MARK",
        "TUPLE",
        "TUPLE1",
        "TUPLE2",
        "TUPLE3",
        "APPEND",
        "APPENDS",
        "SETITEM",
        "SETITEMS",
        "BUILD",
        "REDUCE",
        "NEWOBJ",
        "EMPTY_SET",
        "NONE",
        "NEWTRUE",
        "NEWFALSE",
        "BINPERSID",
        "STOP",
        "POP",
        "DUP",
        "STACK_GLOBAL",
        "FROZENSET",
        "ADDITEMS",
        "MEMOIZE",
    )
] + [
    P.int(0),
    P.int(7),
    P.int(-1),
    P.int(2**40),
    P.str("storage"),
    P.str("0"),
    P.str("cpu"),
    P.get(0),
    P.get(1),
    P.put(0),
    P.put(200),
    P.put(300),
    P.global_("torch", "FloatStorage"),
    P.global_("torch.storage", "UntypedStorage"),
    P.global_("collections", "OrderedDict"),
    P.global_("torch._utils", "_rebuild_tensor_v2"),
    P.global_("torch._utils", "_rebuild_parameter"),
    P.global_("__builtin__", "set"),
    P.global_("torch", "Size"),
    P.global_("builtins", "getattr"),
    P.global_("posix", "system"),
    P.global_("torch", "float32"),
    P.global_("torch._tensor", "_rebuild_from_type_v2"),
    P.global_("collections", "Counter"),
    b"U\x03abc",
    b"C\x02ab",
    b"B\x01\x00\x00\x00a",
    b"\x8c\x03abc",
    b"\x95\x00\x00\x00\x00\x00\x00\x00\x00",
    b"X\xff\xff\xff\x7f",
    b"\x8a\xffAAAA",
    P.ints_tuple(2),
    P.ints_tuple(1, 1),
    P.ints_tuple(2**63),
]
INTERESTING = (0, 1, 2, 3, -1, 255, 256, 2**31 - 1, 2**31, 2**32, 2**62, 2**63 - 1, 2**63, 2**64, -(2**63) - 1, 10**30)


def mutate(data: bytes, rng: random.Random) -> bytes:
    """One to three seeded mutations of a pickle stream."""
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        data = rng.choice(_MUTATIONS)(data, rng)
    return data


def _boundaries(data: bytes) -> list[tuple[str, int, Any]]:
    try:
        return [(op.name, pos, arg) for op, arg, pos in pickletools.genops(data)]
    except Exception:
        return [("?", 0, None)]


def _flip(data: bytes, rng: random.Random) -> bytes:
    if not data:
        return data
    at = rng.randrange(len(data))
    return data[:at] + bytes([rng.randrange(256)]) + data[at + 1 :]


def _delete(data: bytes, rng: random.Random) -> bytes:
    at = rng.randrange(len(data) + 1)
    return data[:at] + data[at + rng.randint(1, 8) :]


def _insert(data: bytes, rng: random.Random) -> bytes:
    _, at, _ = rng.choice(_boundaries(data))
    return data[:at] + rng.choice(SNIPPETS) + data[at:]


def _duplicate(data: bytes, rng: random.Random) -> bytes:
    ops = _boundaries(data)
    index = rng.randrange(len(ops))
    start, end = ops[index][1], ops[index + 1][1] if index + 1 < len(ops) else len(data)
    return data[:end] + data[start:end] + data[end:]


def _drop_opcode(data: bytes, rng: random.Random) -> bytes:
    ops = _boundaries(data)
    index = rng.randrange(len(ops))
    start, end = ops[index][1], ops[index + 1][1] if index + 1 < len(ops) else len(data)
    return data[:start] + data[end:]


def _integer(data: bytes, rng: random.Random) -> bytes:
    ints = [(pos, name) for name, pos, _ in _boundaries(data) if name in ("BININT", "BININT1", "BININT2", "LONG1")]
    if not ints:
        return _insert(data, rng)
    pos, name = rng.choice(ints)
    width = {"BININT": 5, "BININT1": 2, "BININT2": 3}.get(name, 2 + data[pos + 1] if pos + 1 < len(data) else 2)
    return data[:pos] + P.int(rng.choice(INTERESTING)) + data[pos + width :]


def _memo(data: bytes, rng: random.Random) -> bytes:
    memo = [pos for name, pos, _ in _boundaries(data) if name in ("BINPUT", "BINGET")]
    if not memo:
        return _insert(data, rng)
    pos = rng.choice(memo)
    replacement = pickle.LONG_BINPUT if data[pos : pos + 1] == pickle.BINPUT else pickle.LONG_BINGET
    return data[:pos] + replacement + struct.pack("<I", rng.choice((2**28, 2**32 - 1, 5, 0, 1000))) + data[pos + 2 :]


def _global(data: bytes, rng: random.Random) -> bytes:
    globals_ = [(pos, arg) for name, pos, arg in _boundaries(data) if name == "GLOBAL"]
    if not globals_:
        return _insert(data, rng)
    pos, arg = rng.choice(globals_)
    end = pos + 1 + len(str(arg)) + 2
    return data[:pos] + rng.choice([s for s in SNIPPETS if s[:1] == pickle.GLOBAL]) + data[end:]


def _truncate(data: bytes, rng: random.Random) -> bytes:
    return data[: rng.randrange(len(data) + 1)]


def _trailing(data: bytes, rng: random.Random) -> bytes:
    return data + rng.choice(SNIPPETS)


def _protocol(data: bytes, rng: random.Random) -> bytes:
    return data[:1] + bytes([rng.choice((0, 1, 3, 4, 5, 255))]) + data[2:]


_MUTATIONS = [
    _flip,
    _flip,
    _delete,
    _insert,
    _insert,
    _insert,
    _duplicate,
    _drop_opcode,
    _integer,
    _integer,
    _memo,
    _global,
    _truncate,
    _trailing,
    _protocol,
]
