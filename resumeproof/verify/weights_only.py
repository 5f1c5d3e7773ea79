"""Check, without importing torch, that a `torch.save` file holds only what `weights_only=True` loads.

The verifier must stay light (importing torch costs about as much as a whole trajectory), yet it
must not take a trainer's word that its checkpoints are safe to load. So it unpickles the
checkpoint's `data.pkl` with the standard library, letting through only an allowlist of globals
that is a subset of torch's own weights_only allowlist (tests/test_plaindata.py asserts the
subset, and that the verdicts agree with the real `torch.load(..., weights_only=True)`). Tensors
become `TensorInfo` records checked against the storages present in the archive. No global
outside the allowlist is ever resolved, so a pickle that would run code is refused unexecuted.
"""

import io
import pickle
import pickletools
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from resumeproof.common.errors import ResumeproofError

# torch storage class -> bytes per element (the dtype a storage record is read as)
STORAGE_ITEMSIZE = {
    "DoubleStorage": 8, "FloatStorage": 4, "HalfStorage": 2, "BFloat16Storage": 2,
    "LongStorage": 8, "IntStorage": 4, "ShortStorage": 2, "CharStorage": 1,
    "ByteStorage": 1, "BoolStorage": 1, "ComplexDoubleStorage": 16, "ComplexFloatStorage": 8,
}  # fmt: skip
FLOATING = {"Double", "Float", "Half", "BFloat16", "ComplexDouble", "ComplexFloat"}  # may require grad
# The opcodes torch/_weights_only_unpickler.py implements; it refuses every other one.
OPCODES = frozenset({
    "GLOBAL", "NEWOBJ", "REDUCE", "BUILD", "APPEND", "APPENDS", "SETITEM", "SETITEMS", "MARK",
    "TUPLE", "TUPLE1", "TUPLE2", "TUPLE3", "NONE", "NEWFALSE", "NEWTRUE", "EMPTY_TUPLE", "EMPTY_LIST",
    "EMPTY_DICT", "EMPTY_SET", "BININT", "BININT1", "BININT2", "BINFLOAT", "BINUNICODE",
    "SHORT_BINSTRING", "BINPERSID", "BINGET", "LONG_BINGET", "BINPUT", "LONG_BINPUT", "LONG1", "PROTO", "STOP",
})  # fmt: skip
ALLOWED = {
    ("collections", "OrderedDict"),
    ("torch._utils", "_rebuild_tensor_v2"),
    ("torch._utils", "_rebuild_parameter"),
    *(("torch", name) for name in STORAGE_ITEMSIZE),
}


class PlainDataError(ResumeproofError):
    """The file is not a torch archive of plain data and tensors."""


@dataclass(frozen=True)
class Storage:
    kind: str
    numel: int


@dataclass(frozen=True)
class TensorInfo:
    dtype: str
    shape: tuple[int, ...]


def check(path: Path, data: bytes | None = None) -> int:
    """Unpickle `path` (or its bytes, already read) the weights_only way, torch-free; return the
    number of tensors it holds. Only data.pkl is parsed: tensor data is checked for size, not read."""
    try:
        with zipfile.ZipFile(io.BytesIO(data) if data is not None else path) as archive:
            return _Unpickler(archive).count_tensors()
    except zipfile.BadZipFile as err:
        raise PlainDataError(f"{path}: not a torch zip archive ({err})") from None
    except PlainDataError as err:
        raise PlainDataError(f"{path}: {err}") from None
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, IndexError, KeyError, AttributeError) as err:
        raise PlainDataError(f"{path}: malformed pickle ({type(err).__name__}: {err})") from None


class _Unpickler(pickle.Unpickler):
    def __init__(self, archive: zipfile.ZipFile) -> None:
        pickles = [name for name in archive.namelist() if name.endswith("/data.pkl")]
        if len(pickles) != 1:
            raise PlainDataError(f"expected one */data.pkl record, found {len(pickles)}")
        self.prefix = pickles[0].removesuffix("data.pkl")
        self.sizes = {info.filename: info.file_size for info in archive.infolist()}
        if f"{self.prefix}version" not in self.sizes:
            raise PlainDataError(f"no {self.prefix}version record")
        data = archive.read(pickles[0])
        for opcode, _, _ in pickletools.genops(data):
            if opcode.name not in OPCODES:
                raise PlainDataError(f"pickle opcode {opcode.name} is not allowed by weights_only loading")
        self.tensors = 0
        super().__init__(io.BytesIO(data))

    def count_tensors(self) -> int:
        self.load()
        return self.tensors

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in ALLOWED:
            raise PlainDataError(f"global {module}.{name} is not allowed by weights_only loading")
        if module == "collections":
            from collections import OrderedDict

            return OrderedDict
        if name == "_rebuild_tensor_v2":
            return self._rebuild_tensor
        if name == "_rebuild_parameter":
            return lambda data, requires_grad, hooks: data
        return name  # a storage class stands for its name

    def persistent_load(self, pid: Any) -> Storage:
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise PlainDataError(f"unexpected persistent id {pid!r}")
        _, kind, key, _location, numel = pid
        record = f"{self.prefix}data/{key}"
        if kind not in STORAGE_ITEMSIZE or not isinstance(numel, int):
            raise PlainDataError(f"storage {key!r} has unknown type {kind!r}")
        if self.sizes.get(record) != numel * STORAGE_ITEMSIZE[kind]:
            raise PlainDataError(f"storage record {record} is missing or not {numel} x {kind}")
        return Storage(kind, numel)

    def _rebuild_tensor(
        self, storage: Storage, offset: int, size: tuple, stride: tuple, requires_grad: bool, *_: Any
    ) -> TensorInfo:
        if not isinstance(storage, Storage):
            raise PlainDataError("tensor without a storage record")
        if not (_naturals(size) and _naturals(stride) and len(size) == len(stride) and _naturals((offset,))):
            raise PlainDataError(f"tensor geometry offset {offset!r}, size {size!r}, stride {stride!r} is invalid")
        extent = 0 if 0 in size else offset + sum((n - 1) * s for n, s in zip(size, stride, strict=True)) + 1
        if extent > storage.numel:
            raise PlainDataError(f"tensor of shape {list(size)} reaches past its {storage.numel}-element storage")
        dtype = storage.kind.removesuffix("Storage")
        if not isinstance(requires_grad, bool) or (requires_grad and dtype not in FLOATING):
            raise PlainDataError(f"requires_grad={requires_grad!r} on a {dtype} tensor")
        self.tensors += 1
        return TensorInfo(dtype, tuple(size))


def _naturals(values: Any) -> bool:
    """A tuple of ints >= 0 (bools excluded), as torch requires of sizes, strides and offsets."""
    return isinstance(values, tuple) and all(type(v) is int and v >= 0 for v in values)


def check_with_torch(path: Path) -> None:
    """The loader itself, for audits that want it: imports torch, about 1.3 s on its own."""
    import torch  # deliberately late: the default check above keeps the verifier torch-free

    try:
        torch.load(path, map_location="cpu", weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError, ValueError, zipfile.BadZipFile) as err:
        reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise PlainDataError(f"{path}: torch.load(weights_only=True) refused it ({reason})") from None
