"""common/codec.py: a record is written field by field in field order and read back by its type hints; a document
of the wrong shape is refused with one line naming the key."""

import json
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

import pytest

from resumeproof.common import codec
from resumeproof.common.errors import ResumeproofError


class Colour(StrEnum):
    RED = "red"
    BLUE = "blue"


@dataclass(frozen=True)
class Start:
    host: str
    restart: str = ""


@dataclass(frozen=True, kw_only=True)
class Inner:
    kind: Colour
    note: str | None = None


def _older(d: dict[str, Any]) -> dict[str, Any]:
    return d if "count" in d else {**d, "count": len(d["items"])}


@dataclass(frozen=True, kw_only=True)
class Record:
    name: str
    inner: Inner = field(metadata=codec.field(inline=True))
    items: tuple[float, ...]
    count: int
    path: Path
    starts: tuple[Start, ...] = ()
    nested: dict[str, Inner | None] = field(default_factory=dict)
    origin: str = field(default="", metadata=codec.field(key="from"))
    maybe: int | None = field(default=None, metadata=codec.field(omit=True))
    cache: str = field(default="", metadata=codec.field(skip=True))
    scaled: float | None = field(default=None, metadata=codec.field(encode=lambda x: x * 2, decode=lambda x: x / 2))

    json_older = staticmethod(_older)

    def json_extra(self, written: dict[str, Any]) -> dict[str, Any]:
        return {"summary": f"{self.name}: {self.count}", **written}


RECORD = Record(
    name="r",
    inner=Inner(kind=Colour.BLUE),
    items=(0.5, 1.0),
    count=2,
    path=Path("runs/x"),
    starts=(Start("n1"),),
    nested={"a": Inner(kind=Colour.RED, note="n"), "b": None},
    origin="--flag",
    scaled=1.5,
)


def test_a_record_is_written_by_field_in_field_order_with_its_own_keys():
    assert json.dumps(codec.encode(RECORD)) == json.dumps(
        {
            "summary": "r: 2",
            "name": "r",
            "kind": "blue",
            "note": None,
            "items": [0.5, 1.0],
            "count": 2,
            "path": "runs/x",
            "starts": [{"host": "n1", "restart": ""}],
            "nested": {"a": {"kind": "red", "note": "n"}, "b": None},
            "from": "--flag",
            "scaled": 3.0,
        }
    )


def test_a_record_reads_back_equal_from_its_json():
    assert codec.decode(Record, json.loads(json.dumps(codec.encode(RECORD)))) == RECORD
    assert codec.decode(Record, codec.encode(Record(**{**vars(RECORD), "maybe": 3}))).maybe == 3


def test_an_older_document_is_brought_to_this_versions_shape_by_the_records_own_hook():
    document = codec.encode(RECORD)
    del document["count"]
    assert codec.decode(Record, document) == RECORD


def test_a_json_number_without_a_fraction_reads_as_a_float_and_keys_said_for_a_reader_are_not_read():
    document = {**codec.encode(RECORD), "items": [1, 2], "summary": "anything"}
    assert codec.decode(Record, document).items == (1, 2)


@pytest.mark.parametrize(
    ("spoil", "said"),
    [
        (lambda d: d.pop("name"), "Record: missing 'name'"),
        (lambda d: d.pop("kind"), "Record: missing 'kind'"),
        (lambda d: d.update(count="2"), "Record.count: expected int, got a string '2'"),
        (lambda d: d.update(count=True), "Record.count: expected int, got bool True"),
        (lambda d: d.update(items=[0.5, None]), "Record.items[1]: expected float, got null"),
        (lambda d: d.update(kind="green"), "Record.kind: 'green' is not one of red, blue"),
        (lambda d: d.update(path=3), "Record.path: expected a string, got int 3"),
        (lambda d: d["nested"].update(a={"note": "n"}), "Record.nested.a: missing 'kind'"),
        (lambda d: d.update(starts=[{"restart": "1"}]), "Record.starts[0]: missing 'host'"),
        (lambda d: d.update(starts={"host": "n1"}), "Record.starts: expected an array, got an object {'host': 'n1'}"),
    ],
)
def test_a_document_of_the_wrong_shape_is_refused_with_one_line_naming_the_key(spoil, said):
    document = codec.encode(RECORD)
    spoil(document)
    with pytest.raises(codec.CodecError) as refused:
        codec.decode(Record, document)
    assert str(refused.value) == said
    assert isinstance(refused.value, ResumeproofError) and isinstance(refused.value, ValueError)


def test_a_record_that_is_not_an_object_is_refused():
    with pytest.raises(codec.CodecError, match=r"^Record: expected an object, got an array \[\]$"):
        codec.decode(Record, [])
