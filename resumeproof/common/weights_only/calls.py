"""The calls of allowlisted builtins, collections and small torch types, as torch.save writes them.

Each takes the REDUCE arguments and refuses any shape other than the one Python's pickler
(protocol 2 or 3) writes for that type, so that a call torch would reject, or run with
arguments it was never meant to see, is refused here first.
"""

from collections import Counter, OrderedDict
from typing import Any, Protocol

from resumeproof.common.weights_only.errors import Refusal
from resumeproof.common.weights_only.limits import LIMITS
from resumeproof.common.weights_only.values import Device, Opaque, Size

INT64 = 1 << 63
# Device types torch.device accepts (a test asks torch); torch.save writes (type,) or (type, index).
DEVICE_TYPES = frozenset({"cpu", "cuda", "mps", "meta", "xpu", "hpu", "xla", "mtia", "privateuseone"})
MAX_DEVICE_INDEX = 127
LAYOUTS = {name: Opaque(name) for name in (
    "torch.strided", "torch.sparse_coo", "torch.sparse_csr", "torch.sparse_csc", "torch.sparse_bsr",
    "torch.sparse_bsc", "torch._mkldnn", "torch.jagged",
)}  # fmt: skip


class Machine(Protocol):
    """What a call may ask of the unpickler running it: to account for its work and its tuples."""

    def spend(self, work: int) -> None: ...

    def hash_cost(self, key: object) -> int: ...

    def made_tuple(self, value: tuple) -> None: ...


def arity(name: str, args: tuple, *allowed: int) -> None:
    if len(args) not in allowed:
        counts = " or ".join(map(str, allowed))
        raise Refusal(f"{name} called with {len(args)} arguments, where torch.save writes {counts}")


def ordered_dict(vm: Machine, args: tuple) -> OrderedDict:
    arity("collections.OrderedDict", args, 0)  # its items follow as SETITEMS, its attributes as BUILD
    return OrderedDict()


def counter(vm: Machine, args: tuple) -> Counter:
    arity("collections.Counter", args, 1)
    if type(args[0]) is not dict:
        raise Refusal(f"collections.Counter of a {type(args[0]).__name__}, where torch.save writes a dict")
    vm.spend(len(args[0]))
    return Counter(args[0])


def size(vm: Machine, args: tuple) -> Size:
    arity("torch.Size", args, 1)
    dims = args[0]
    if type(dims) is not tuple or len(dims) > LIMITS.dims:
        raise Refusal(
            f"torch.Size of a {type(dims).__name__}, not the tuple of at most {LIMITS.dims} ints of torch.save"
        )
    if not all(type(n) is int and -INT64 <= n < INT64 for n in dims):
        raise Refusal("torch.Size with an element that is not an int64")
    result = Size(dims)
    vm.made_tuple(result)
    return result


def device(vm: Machine, args: tuple) -> Device:
    arity("torch.device", args, 1, 2)
    kind, index = args[0], args[1] if len(args) == 2 else None
    if type(kind) is not str or kind not in DEVICE_TYPES:
        raise Refusal("torch.device of a device type this check does not know")
    if len(args) == 2 and not (type(index) is int and 0 <= index <= MAX_DEVICE_INDEX):
        raise Refusal(f"torch.device index outside 0..{MAX_DEVICE_INDEX}")
    return Device(kind, index)


def layout(vm: Machine, args: tuple) -> Opaque:
    arity("torch.serialization._get_layout", args, 1)
    if type(args[0]) is not str or args[0] not in LAYOUTS:
        raise Refusal("torch.serialization._get_layout of a name that is not a torch layout")
    return LAYOUTS[args[0]]


def encode(vm: Machine, args: tuple) -> bytes:
    """bytes, as protocol 2 writes them: _codecs.encode(text, "latin1")."""
    arity("_codecs.encode", args, 2)
    text, codec = args
    if type(text) is not str or type(codec) is not str or codec != "latin1":
        raise Refusal("_codecs.encode with arguments other than (str, 'latin1'), which torch.save writes for bytes")
    vm.spend(len(text))
    try:
        return text.encode("latin-1")
    except UnicodeEncodeError:
        raise Refusal("_codecs.encode of text that is not latin-1") from None


def bytearray_(vm: Machine, args: tuple) -> bytearray:
    arity("builtins.bytearray", args, 0, 1)
    if args and type(args[0]) is not bytes:
        raise Refusal(f"builtins.bytearray of a {type(args[0]).__name__}, where torch.save writes bytes")
    vm.spend(len(args[0]) if args else 0)
    return bytearray(*args)


def set_(vm: Machine, args: tuple) -> set:
    arity("builtins.set", args, 1)
    if type(args[0]) is not list:
        raise Refusal(f"builtins.set of a {type(args[0]).__name__}, where torch.save writes a list")
    vm.spend(len(args[0]))  # the least it costs; tuples cost what hashing them costs
    if set(map(type, args[0])) & {tuple, Size}:  # map(type) runs in C: no Python loop for a list of scalars
        vm.spend(sum(vm.hash_cost(item) - 1 for item in args[0] if type(item) in (tuple, Size)))
    try:
        return set(args[0])
    except TypeError:
        raise Refusal("builtins.set of an unhashable element") from None


def complex_(vm: Machine, args: tuple) -> complex:
    arity("builtins.complex", args, 2)
    if not all(type(part) is float for part in args):
        raise Refusal("builtins.complex of parts that are not floats, as torch.save writes them")
    return complex(*args)


def no_state(name: str, hooks: Any) -> None:
    """torch.save writes an empty OrderedDict for a tensor's backward hooks: hooks are never saved."""
    if type(hooks) is not OrderedDict or hooks or vars(hooks):
        raise Refusal(f"{name}: backward hooks other than the empty OrderedDict torch.save writes")
