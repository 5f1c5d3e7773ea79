"""Storages named by persistent ids, and the tensors and parameters rebuilt on them.

A storage is what torch reads from record data/KEY: torch.save numbers storages 0, 1, ... in the
order it meets them, names each by its legacy typed class or UntypedStorage, and writes
numel x itemsize bytes for it. A persistent id is held to exactly that, and every later id of
the same key must repeat the first one, so that one record can never be read as two dtypes or
two sizes. A tensor's geometry must fit inside its storage in bytes, with every number far
inside int64, and only the arguments torch.save writes are accepted for each rebuild function.
"""

import re
from typing import Any

from resumeproof.common.weights_only.calls import Machine, arity, no_state
from resumeproof.common.weights_only.errors import Refusal
from resumeproof.common.weights_only.limits import LIMITS
from resumeproof.common.weights_only.values import DType, Storage, StorageClass, Tensor

KEY = re.compile(r"0|[1-9][0-9]{0,8}")
# location_tag(): "cpu", "cuda:0", "mps", ...; with map_location="cpu" torch ignores it.
LOCATION = re.compile(r"[a-z][a-z0-9_]{0,31}(:[0-9]{1,3})?")
METADATA = frozenset({"conj", "neg"})  # the bits torch._utils.get_tensor_metadata can report


class Storages:
    """The storage records of one archive, and the persistent ids that name them."""

    def __init__(self, record_bytes: tuple[int, ...]) -> None:
        self.record_bytes = record_bytes
        self.first: dict[str, Storage] = {}

    def load(self, pid: Any) -> Storage:
        if type(pid) is not tuple or len(pid) != 5 or type(pid[0]) is not str or pid[0] != "storage":
            raise Refusal("a persistent id that is not the ('storage', class, key, location, numel) torch.save writes")
        _, cls, key, location, numel = pid
        if type(cls) is not StorageClass:
            raise Refusal("a persistent id whose storage class torch.save does not write")
        if cls.refused:
            raise Refusal(f"a persistent id naming {cls.name}: {cls.refused}")
        if type(key) is not str or not KEY.fullmatch(key):
            raise Refusal("a persistent id whose key is not a decimal number, as torch.save writes it")
        if type(location) is not str or not LOCATION.fullmatch(location):
            raise Refusal("a persistent id whose location is not a device tag")
        if type(numel) is not int or not 0 <= numel <= LIMITS.extent:
            raise Refusal(f"storage data/{key} with an element count that is not an int in 0..2**62")
        storage = Storage(key, cls, numel, numel * (cls.dtype.itemsize if cls.dtype else 1), location)
        return self._remember(storage)

    def _remember(self, storage: Storage) -> Storage:
        first = self.first.get(storage.key)
        if first is not None:
            if (first.cls, first.numel, first.location) != (storage.cls, storage.numel, storage.location):
                raise Refusal(f"storage data/{storage.key} is named with two types, sizes or locations")
            # torch hands out the same storage again, except for empty ones, which it reloads.
            return first if first.nbytes else storage
        if storage.key != str(len(self.first)):
            raise Refusal(f"storage data/{storage.key} is not numbered in the order torch.save numbers storages")
        if len(self.first) >= len(self.record_bytes):
            raise Refusal(f"storage data/{storage.key} has no record in the archive")
        if self.record_bytes[len(self.first)] != storage.nbytes:
            raise Refusal(
                f"storage record data/{storage.key} holds {self.record_bytes[len(self.first)]} bytes,"
                f" not the {storage.nbytes} its persistent id states"
            )
        self.first[storage.key] = storage
        return storage

    def finish(self) -> None:
        if len(self.first) != len(self.record_bytes):
            raise Refusal(f"storage record data/{len(self.first)} is never referenced by data.pkl")


def rebuild_tensor_v2(vm: Machine, args: tuple) -> Tensor:
    """_rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks[, metadata]) on a typed storage."""
    arity("_rebuild_tensor_v2", args, 6, 7)
    storage = args[0]
    if type(storage) is not Storage or storage.cls.dtype is None or storage.cls.dtype.rebuild != "v2":
        raise Refusal("_rebuild_tensor_v2 on something other than a typed storage torch.save writes for it")
    return _tensor("_rebuild_tensor_v2", storage, storage.cls.dtype, args[1:6], args[6:])


def rebuild_tensor_v3(vm: Machine, args: tuple) -> Tensor:
    """_rebuild_tensor_v3(storage, offset, size, stride, requires_grad, hooks, dtype[, metadata]) on bytes."""
    arity("_rebuild_tensor_v3", args, 7, 8)
    storage, dtype = args[0], args[6]
    if type(storage) is not Storage or storage.cls.dtype is not None:
        raise Refusal("_rebuild_tensor_v3 on something other than the untyped storage torch.save writes for it")
    if type(dtype) is not DType or dtype.rebuild != "v3":
        raise Refusal("_rebuild_tensor_v3 with a dtype torch.save does not write it for")
    if args[4] is not False:  # torch makes the tensor with requires_grad, then set_() fails on the leaf
        raise Refusal("_rebuild_tensor_v3 with requires_grad, which torch's own rebuild fails on")
    return _tensor("_rebuild_tensor_v3", storage, dtype, args[1:6], args[7:])


def rebuild_parameter(vm: Machine, args: tuple) -> Tensor:
    """_rebuild_parameter(data, requires_grad, hooks): data is the detached tensor torch.save writes."""
    arity("_rebuild_parameter", args, 3)
    data, requires_grad, hooks = args
    if type(data) is not Tensor or data.parameter or data.requires_grad:
        raise Refusal("_rebuild_parameter of something other than the plain detached tensor torch.save writes")
    _requires_grad("_rebuild_parameter", data.dtype, requires_grad)
    no_state("_rebuild_parameter", hooks)
    return Tensor(data.dtype, data.shape, requires_grad, parameter=True)


def _tensor(name: str, storage: Storage, dtype: DType, rest: tuple, metadata: tuple) -> Tensor:
    offset, size, stride, requires_grad, hooks = rest
    _geometry(name, storage, dtype.itemsize, offset, size, stride)
    _requires_grad(name, dtype, requires_grad)
    no_state(name, hooks)
    if metadata:
        _metadata(name, dtype, metadata[0])
    return Tensor(dtype, size, requires_grad, parameter=False)


def _geometry(name: str, storage: Storage, itemsize: int, offset: Any, size: Any, stride: Any) -> None:
    if type(offset) is not int or type(size) is not tuple or type(stride) is not tuple:
        raise Refusal(f"{name}: offset, size and stride must be an int and two tuples, as torch.save writes them")
    if len(size) != len(stride) or len(size) > LIMITS.dims:
        raise Refusal(f"{name}: {len(size)} sizes and {len(stride)} strides (equal and at most {LIMITS.dims})")
    if not all(type(n) is int and 0 <= n <= LIMITS.extent for n in (offset, *size, *stride)):
        raise Refusal(f"{name}: an offset, size or stride that is not an int in 0..2**62")
    numel = 1
    for n in size:
        numel *= n or 1
        if numel > LIMITS.extent:
            raise Refusal(f"{name}: more than 2**62 elements")
    if 0 in size:  # torch checks no bounds for an empty tensor: torch.save writes empty views past the end
        if offset * itemsize > LIMITS.extent:
            raise Refusal(f"{name}: an empty tensor's offset of more than 2**62 bytes")
        return
    last = offset + 1 + sum((n - 1) * s for n, s in zip(size, stride, strict=True))
    if last * itemsize > storage.nbytes:
        raise Refusal(f"{name}: a tensor reaching past its {storage.nbytes}-byte storage data/{storage.key}")


def _requires_grad(name: str, dtype: DType, requires_grad: Any) -> None:
    if type(requires_grad) is not bool:
        raise Refusal(f"{name}: requires_grad is not a bool")
    if requires_grad and not dtype.grad:
        raise Refusal(f"{name}: requires_grad on a {dtype.name} tensor, which torch refuses")


def _metadata(name: str, dtype: DType, metadata: Any) -> None:
    """torch.save adds {'conj': True} and/or {'neg': True} for conjugate and negative views, nothing else."""
    if type(metadata) is not dict or not metadata or not set(metadata) <= METADATA:
        raise Refusal(f"{name}: tensor metadata other than the conj/neg bits torch.save writes")
    if any(value is not True for value in metadata.values()):
        raise Refusal(f"{name}: tensor metadata bits that are not True")
    if ("conj" in metadata and not dtype.complex) or ("neg" in metadata and not dtype.grad):
        raise Refusal(f"{name}: a conj bit on a real tensor or a neg bit on an integer one")
