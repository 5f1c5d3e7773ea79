"""The project's frozen dataclasses as JSON values and back: a record is written field by field in field order, and
read back by its type hints, every value checked against its field's type, so that a document of the wrong shape is
refused with one line naming the key instead of surfacing later as a KeyError."""

import dataclasses
import enum
import functools
import types
import typing
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from resumeproof.common.errors import ResumeproofError

T = TypeVar("T")
JSON = "json"  # the metadata key of a field's Json
# A record's own hooks, where it has them: its older documents brought to this version's shape before they are read
# (a static method, dict to dict), and the keys it writes for a reader beside its fields (a method, given the fields'
# object: it returns the document), which a reader computes again.
OLDER, EXTRA = "json_older", "json_extra"


class CodecError(ResumeproofError, ValueError):
    """A document that does not hold the shape its type declares."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Json:
    """How one field is written where it is not written plainly under its own name."""

    key: str | None = None  # the document's key, where it is not the field's name
    omit: bool = False  # left out where None (and, being absent, read as None)
    inline: bool = False  # a nested record whose keys are written among its owner's own
    skip: bool = False  # never written, never read (a record that is read back gives such a field a default)
    encode: Callable[[Any], Any] | None = None  # a value with its own shape (None is written as null all the same)
    decode: Callable[[Any], Any] | None = None  # and its reading (null is read by the field's type)


PLAIN = Json()


def field(**how: Any) -> dict[str, Json]:
    """A field's metadata: `dataclasses.field(metadata=codec.field(key="from"))`."""
    return {JSON: Json(**how)}


def encode(value: Any) -> Any:
    """A JSON value: a dataclass as an object by field, an enum as its value, a path as a string, any sequence as a
    list; mappings keep their keys."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _encode_fields(value)
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, tuple | list):
        return [encode(item) for item in value]
    if isinstance(value, Mapping):
        return {name: encode(item) for name, item in value.items()}
    return value


def _encode_fields(record: Any) -> dict[str, Any]:
    written: dict[str, Any] = {}
    for f in dataclasses.fields(record):
        how, value = f.metadata.get(JSON, PLAIN), getattr(record, f.name)
        if how.skip or (how.omit and value is None):
            continue
        value = how.encode(value) if how.encode and value is not None else encode(value)
        if how.inline:
            written |= value
        else:
            written[how.key or f.name] = value
    extra = getattr(record, EXTRA, None)
    return extra(written) if extra else written


@typing.overload
def decode(kind: type[T], value: Any, where: str = "") -> T: ...
@typing.overload
def decode(kind: Any, value: Any, where: str = "") -> Any: ...
def decode(kind: Any, value: Any, where: str = "") -> Any:
    """`value` read as `kind` (a type hint), checked all the way down; CodecError names the first key that is not."""
    where = where or getattr(kind, "__name__", "document")
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if kind is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        return _union(args, value, where)
    if dataclasses.is_dataclass(kind):
        return _decode_fields(kind, _expect(dict, value, where), where)
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        try:
            return kind(value)
        except ValueError:
            raise CodecError(f"{where}: {value!r} is not one of {', '.join(str(m.value) for m in kind)}") from None
    if kind is Path:
        return Path(_expect(str, value, where))
    if origin in (tuple, list):
        items = _expect(list, value, where)
        if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
            raise TypeError(f"codec: {kind} is not a homogeneous tuple")  # no field of the project's is one
        read = [decode(args[0], item, f"{where}[{i}]") for i, item in enumerate(items)]
        return tuple(read) if origin is tuple else read
    if origin in (dict, Mapping):
        given = _expect(dict, value, where)
        return {_expect(str, k, where): decode(args[1], item, f"{where}.{k}") for k, item in given.items()}
    return _expect(typing.cast(type, kind), value, where)


def _union(options: tuple[Any, ...], value: Any, where: str) -> Any:
    if value is None and types.NoneType in options:
        return None
    kinds = [option for option in options if option is not types.NoneType]
    for kind in kinds[:-1]:
        try:
            return decode(kind, value, where)
        except CodecError:
            continue
    return decode(kinds[-1], value, where)


def _decode_fields(cls: Any, given: dict[str, Any], where: str) -> Any:
    # Keys the record does not name are not read: a document also says what a reader computes again (a check's
    # `failure`, a fault's `status`).
    older = getattr(cls, OLDER, None)
    given = older(given) if older else given
    hints, read = _hints(cls), {}
    for f in dataclasses.fields(cls):
        how = f.metadata.get(JSON, PLAIN)
        key = how.key or f.name
        if how.skip or not f.init:
            continue
        if how.inline:
            read[f.name] = decode(hints[f.name], given, where)
        elif key in given:
            value = given[key]
            own = how.decode and value is not None
            read[f.name] = how.decode(value) if own else decode(hints[f.name], value, f"{where}.{key}")
        elif how.omit:
            read[f.name] = None
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise CodecError(f"{where}: missing {key!r}")
    return cls(**read)


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _expect(kind: type[T], value: Any, where: str) -> T:
    """`value` itself where it is a `kind`: a bool is no number, an int is a float (JSON does not tell them)."""
    wanted = (int, float) if kind is float else kind
    if (isinstance(value, bool) and kind is not bool) or not isinstance(value, wanted):
        got = "null" if value is None else f"{_said(type(value))} {value!r:.60}"  # a long value cut: one short line
        raise CodecError(f"{where}: expected {_said(kind)}, got {got}")
    return typing.cast(T, value)


def _said(kind: type) -> str:
    said: dict[type, str] = {dict: "an object", list: "an array", str: "a string"}
    return said.get(kind, kind.__name__)
