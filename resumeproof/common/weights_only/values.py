"""Stand-ins for the torch objects a weights_only load makes: what the check needs to know of each.

Plain values (str, int, float, bytes, list, dict, set, OrderedDict, Counter, ...) are the real
Python objects, so hashing, equality and mutation behave exactly as they do in torch's loader.
A stand-in has the identity semantics of the object it stands for: dtypes, classes and
functions are one object per name; tensors and storages compare by identity, as torch's do;
torch.device compares by value, and torch.Size is a tuple.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, eq=False)
class DType:
    name: str  # as after "torch.", e.g. "float32"
    itemsize: int
    rebuild: str  # "v2": tensors rebuilt from a typed storage; "v3": from an untyped one; "": none saved
    grad: bool = False  # floating point or complex: may require grad
    complex: bool = False


@dataclass(frozen=True, eq=False)
class StorageClass:
    name: str  # full name, e.g. "torch.FloatStorage"
    dtype: DType | None  # None: torch.storage.UntypedStorage, whose elements are bytes
    refused: str | None = None  # why a storage of this class is refused; None: torch.save names storages so


@dataclass(frozen=True, eq=False)
class Opaque:
    """An allowlisted global that is only ever a value here: a class, a qscheme, a layout."""

    name: str


@dataclass(frozen=True, eq=False)
class Function:
    """An allowlisted global called by REDUCE: `call` checks the arguments torch.save writes, or it is refused."""

    name: str
    call: Callable[[Any, tuple], Any] | None
    refused: str = ""  # why calling it is refused, when `call` is None


@dataclass(frozen=True, eq=False)
class Storage:
    key: str
    cls: StorageClass
    numel: int
    nbytes: int
    location: str


@dataclass(frozen=True, eq=False)
class Tensor:
    dtype: DType
    shape: tuple[int, ...]
    requires_grad: bool
    parameter: bool


@dataclass(frozen=True)
class Device:
    type: str
    index: int | None


class Size(tuple):
    """torch.Size: a tuple subclass of ints, equal and hashed as its tuple."""

    __slots__ = ()
