"""A torch.distributed.checkpoint (DCP) directory checked without torch: its `.metadata`, then every item.

`.metadata` is a pickle. Its globals are listed statically first (weights_only.pickle_globals),
and it is refused unless every one is in the DCP allowlist (common/dcp_files.py) and none names a
non-tensor item. Only then is it unpickled, with every global replaced by an inert stand-in that
records its arguments and state and runs nothing, and its structure checked: each tensor's
chunks inside its size, each storage entry naming a data file `__R_N.distcp` of this folder with
its bytes inside the file, the entries of each data file tiling it exactly (no hidden bytes),
no stream transforms. Each item of a data file is a torch.save archive, held to the torch-free
weights_only check like any checkpoint file.
"""

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from resumeproof.common import dcp_files, weights_only
from resumeproof.common.errors import ResumeproofError

MAX_NODES = 1_000_000  # objects the structure check visits: a pickle can share one list many times


class DcpError(ResumeproofError):
    """A DCP directory whose `.metadata` or data files are refused."""

    def __init__(self, message: str, globals_: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.globals = globals_  # set when the refusal is about globals: what loading would import


@dataclass(frozen=True)
class Item:
    fqn: str  # the flattened state dict key
    file: str  # __R_N.distcp
    offset: int
    length: int


@dataclass(frozen=True)
class Layout:
    tensors: dict[str, tuple[str, tuple[int, ...]]]  # fqn -> (dtype name, global size)
    items: tuple[Item, ...]


class _Stub:
    """What a DCP global unpickles to here: its name, the arguments it was called with, its state."""

    name = ""
    args: tuple[Any, ...] = ()
    state: Any = None

    def __init__(self, *args: Any) -> None:
        self.args = args

    def __setstate__(self, state: Any) -> None:
        self.state = state


_STUBS = {name: type(name.rpartition(".")[2], (_Stub,), {"name": name}) for name in dcp_files.GLOBALS}


def read(folder: Path) -> Layout:
    """The tensors and storage entries of `folder/.metadata`, once its globals and structure passed."""
    path = folder / dcp_files.METADATA
    try:
        size = path.stat().st_size
        if size > dcp_files.MAX_METADATA_BYTES:
            raise DcpError(f"{path}: {size} bytes, more than {dcp_files.MAX_METADATA_BYTES}; refused")
        data = path.read_bytes()
    except FileNotFoundError:
        raise DcpError(f"{folder}: no {dcp_files.METADATA}: the save did not finish") from None
    except OSError as err:
        raise DcpError(f"{path}: cannot be read ({err.strerror or err})") from None
    return parse(data, path)


def parse(data: bytes, path: Path) -> Layout:
    """`read` for the bytes of a `.metadata` already read (`path` names it in messages)."""
    try:
        found = tuple(weights_only.pickle_globals(data))
    except weights_only.WeightsOnlyError as err:
        raise DcpError(f"{path}: {err}".replace("pickle data: ", "")) from None
    if dcp_files.BYTES_ITEM in found:
        raise DcpError(f"{path}: holds non-tensor items, which stock dcp.load reads with weights_only=False", found)
    unknown = tuple(name for name in found if name not in dcp_files.GLOBALS)
    if unknown:
        raise DcpError(f"{path}: names {', '.join(unknown[:4])}, outside the DCP allowlist", found)
    try:
        top = dcp_files.unpickle(data, _STUBS)  # only stubs: nothing of torch's runs
    except Exception as err:  # any failure to unpickle is a refusal, never a crash of the caller
        raise DcpError(f"{path}: not a readable pickle ({type(err).__name__}: {err})"[:300]) from None
    try:
        return _Check().layout(top)
    except _Invalid as err:
        raise DcpError(f"{path}: {err}") from None


def check_files(folder: Path, layout: Layout) -> dict[str, list[Item]]:
    """Every data file present and referenced, each tiled exactly by its items (sizes only); items by file."""
    present = {p.name: p for p in folder.iterdir() if dcp_files.DATA_FILE.fullmatch(p.name)}
    by_file: dict[str, list[Item]] = {}
    for item in layout.items:
        by_file.setdefault(item.file, []).append(item)
    missing, unused = sorted(set(by_file) - set(present)), sorted(set(present) - set(by_file))
    if missing or unused:
        said = f"{missing[0]} is missing" if missing else f"{unused[0]} is not referenced by {dcp_files.METADATA}"
        raise DcpError(f"{folder}: {said}")
    for name, items in by_file.items():
        items.sort(key=lambda i: i.offset)
        end, size = 0, present[name].stat().st_size
        for item in items:
            if item.offset != end:
                raise DcpError(f"{folder / name}: bytes {end}..{item.offset} belong to no item of {dcp_files.METADATA}")
            end = item.offset + item.length
        if end != size:
            raise DcpError(f"{folder / name}: items end at byte {end}, the file has {size}")
    return by_file


def data_items(path: Path, items: list[Item] | None = None) -> Iterator[tuple[Item, bytes]]:
    """Each item of a data file with its bytes, judged against the `.metadata` beside it first (`items`:
    this file's, when the caller has checked the `.metadata` already)."""
    if items is None:
        items = check_files(path.parent, read(path.parent))[path.name]
    data = path.read_bytes()
    for item in items:
        yield item, data[item.offset : item.offset + item.length]


def check_data_file(path: Path, items: list[Item] | None = None) -> int:
    """A data file judged against the `.metadata` beside it, each item by the weights_only check; its tensors."""
    tensors = 0
    for item, data in data_items(path, items):
        try:
            tensors += weights_only.check(path, data).tensors
        except weights_only.WeightsOnlyError as err:
            raise item_refused(path, item, err) from None
    return tensors


def item_refused(path: Path, item: Item, err: Exception) -> "DcpError":
    reason = str(err).removeprefix(f"{path}: ")
    return DcpError(f"{path}: item {item.fqn} at byte {item.offset}: {reason}")


class _Invalid(Exception):
    pass


class _Check:
    """The structure torch 2.13's FileSystemWriter gives `.metadata`, checked stand-in by stand-in."""

    def __init__(self) -> None:
        self.visited = 0

    def _is(self, value: Any, name: str) -> bool:
        self.visited += 1
        if self.visited > MAX_NODES:
            raise _Invalid(f"more than {MAX_NODES} objects; refused")
        return type(value) is _STUBS.get(name)

    def _state(self, value: Any, name: str, required: set[str], optional: Iterable[str] = ()) -> dict:
        state = value.state if self._is(value, name) else None
        if not isinstance(state, dict) or value.args or not required <= state.keys() <= required | set(optional):
            raise _Invalid(f"expected a {name.rpartition('.')[2]} with {', '.join(sorted(required))}")
        return state

    def _size(self, value: Any, what: str) -> tuple[int, ...]:
        if not (self._is(value, dcp_files.SIZE) and value.state is None and len(value.args) == 1):
            raise _Invalid(f"{what} is not a torch.Size")
        dims = value.args[0]
        if not (type(dims) is tuple and all(type(d) is int and d >= 0 for d in dims)):
            raise _Invalid(f"{what} is not a tuple of non-negative ints")
        return dims

    def layout(self, top: Any) -> Layout:
        fields = {"state_dict_metadata", "storage_data"}
        state = self._state(top, dcp_files.METADATA_CLASS, fields, {"planner_data", "storage_meta", "version"})
        tensors = self._tensors(state["state_dict_metadata"])
        items = self._items(state["storage_data"], tensors)
        self._planner(state.get("planner_data"))
        self._storage_meta(state.get("storage_meta"))
        if not (state.get("version") is None or type(state.get("version")) is str):
            raise _Invalid("version is not a string")
        return Layout(tensors, items)

    def _tensors(self, entries: Any) -> dict[str, tuple[str, tuple[int, ...]]]:
        if type(entries) is not dict:
            raise _Invalid("state_dict_metadata is not a dict")
        out = {}
        for fqn, entry in entries.items():
            if type(fqn) is not str:
                raise _Invalid(f"state_dict_metadata key {fqn!r} is not a string")
            state = self._state(entry, dcp_files.TENSOR_ITEM, {"properties", "size", "chunks"})
            dtype = self._properties(state["properties"], fqn)
            size = self._size(state["size"], f"{fqn}: size")
            if type(state["chunks"]) is not list:
                raise _Invalid(f"{fqn}: chunks is not a list")
            for chunk in state["chunks"]:
                self._chunk(chunk, size, fqn)
            out[fqn] = (dtype, size)
        return out

    def _properties(self, value: Any, fqn: str) -> str:
        state = value.state if self._is(value, dcp_files.PROPERTIES) else None
        if not (type(state) is tuple and len(state) == 5 and not value.args):
            raise _Invalid(f"{fqn}: properties are not (dtype, layout, requires_grad, memory format, pin_memory)")
        dtype, layout, requires_grad, memory_format, pinned = state
        name: str = getattr(dtype, "name", "")
        name = name if isinstance(dtype, type) and _STUBS.get(name) is dtype else ""
        if not (name.startswith("torch.") and name.removeprefix("torch.") in dcp_files.DTYPES):
            raise _Invalid(f"{fqn}: dtype is not a torch dtype")
        if not (self._is(layout, dcp_files.LAYOUT) and layout.args == ("torch.strided",) and layout.state is None):
            raise _Invalid(f"{fqn}: layout is not torch.strided")
        encoded = memory_format.args if self._is(memory_format, dcp_files.MEMORY_FORMAT) else None
        if not (encoded in ((0,), (1,), (2,)) and memory_format.state is None):
            raise _Invalid(f"{fqn}: memory format is not one DCP encodes")
        if type(requires_grad) is not bool or type(pinned) is not bool:
            raise _Invalid(f"{fqn}: requires_grad and pin_memory must be booleans")
        return name.removeprefix("torch.")

    def _chunk(self, value: Any, size: tuple[int, ...], fqn: str) -> None:
        state = self._state(value, dcp_files.CHUNK, {"offsets", "sizes"})
        offsets, sizes = self._size(state["offsets"], f"{fqn}: chunk"), self._size(state["sizes"], f"{fqn}: chunk")
        if not (len(offsets) == len(sizes) == len(size)):
            raise _Invalid(f"{fqn}: a chunk of another rank than its tensor")
        if any(o + s > n for o, s, n in zip(offsets, sizes, size, strict=True)):
            raise _Invalid(f"{fqn}: a chunk outside its tensor")

    def _items(self, storage: Any, tensors: dict[str, Any]) -> tuple[Item, ...]:
        if type(storage) is not dict:
            raise _Invalid("storage_data is not a dict")
        items = []
        for index, info in storage.items():
            key = self._state(index, dcp_files.INDEX, {"fqn"}, {"offset", "index"})
            fqn = key["fqn"]
            if type(fqn) is not str or fqn not in tensors:
                raise _Invalid(f"storage entry for {fqn!r}, which names no tensor")
            if key.get("offset") is not None:
                self._size(key["offset"], f"{fqn}: storage offset")
            if not (key.get("index") is None or type(key.get("index")) is int):
                raise _Invalid(f"{fqn}: storage index is not an int")
            fields = {"relative_path", "offset", "length"}
            where = self._state(info, dcp_files.STORAGE_INFO, fields, {"transform_descriptors"})
            file, offset, length = where["relative_path"], where["offset"], where["length"]
            if not (type(file) is str and dcp_files.DATA_FILE.fullmatch(file)):
                raise _Invalid(f"{fqn}: data file {file!r} is not a __R_N.distcp name of this folder")
            if not (type(offset) is int and type(length) is int and offset >= 0 and length > 0):
                raise _Invalid(f"{fqn}: offset and length must be ints, offset >= 0, length > 0")
            if where.get("transform_descriptors"):
                raise _Invalid(f"{fqn}: stream transforms {where['transform_descriptors']!r} are not accepted")
            items.append(Item(fqn, file, offset, length))
        return tuple(items)

    def _planner(self, planner: Any) -> None:
        if planner is None:
            return
        if type(planner) is not dict:
            raise _Invalid("planner_data is not a dict")
        for key, path in planner.items():
            self.visited += 1
            if not (type(key) is str and type(path) is tuple and all(type(p) in (str, int) for p in path)):
                raise _Invalid("planner_data must map names to tuples of names and indices")

    def _storage_meta(self, meta: Any) -> None:
        if meta is None:
            return
        state = self._state(meta, dcp_files.STORAGE_META, set(), {"checkpoint_id", "save_id", "load_id", "modules"})
        where = state.get("checkpoint_id")
        is_path = any(self._is(where, name) for name in dcp_files.PATHS) and getattr(where, "state", None) is None
        if not (where is None or type(where) is str or (is_path and all(type(p) is str for p in where.args))):
            raise _Invalid("storage_meta.checkpoint_id is not a path")
        for key in ("save_id", "load_id"):
            if not (state.get(key) is None or type(state.get(key)) is str):
                raise _Invalid(f"storage_meta.{key} is not a string")
        modules = state.get("modules", [])
        if not (type(modules) is list and all(type(m) is str for m in modules)):
            raise _Invalid("storage_meta.modules is not a list of strings")
