"""Seeded mutations of the zip container and records of a valid torch.save archive."""

import random
from collections.abc import Callable

from . import pickles
from .zipwriter import Layout, Record, write

Change = Callable[[list[Record], Layout, random.Random, bytes], None]


def mutate(prefix: str, records: list[Record], rng: random.Random, payload: bytes) -> bytes:
    """One or two record or layout changes, written with the torch-exact writer; or raw byte damage."""
    layout = Layout(prefix=prefix)
    if rng.random() < 0.12:
        data = bytearray(write(records, layout))
        for _ in range(rng.randint(1, 3)):  # a byte anywhere in headers, directory or end records
            data[rng.randrange(len(data))] = rng.randrange(256)
        return bytes(data)
    for _ in range(rng.choice((1, 1, 2))):
        rng.choice(_CHANGES)(records, layout, rng, payload)
    return write(records, layout)


def _pick(records: list[Record], rng: random.Random) -> Record:
    return rng.choice(records)


def _add(records: list[Record], layout: Layout, rng: random.Random, payload: bytes) -> None:
    existing = _pick(records, rng).name
    name = rng.choice(
        (
            existing.upper(),
            existing.capitalize(),
            "DATA.PKL",
            "Data.pkl",
            "constants.pkl",
            ".data/version",
            "data/99",
            f"{layout.prefix}/data.pkl",
            "data.pkl",
            "code/x.py",
            "byteorder",
            "extra",
        )
    )
    data = rng.choice((payload, b"", b"3\n", b"little", b"\0" * 8))
    records.insert(rng.randrange(len(records) + 1), Record(name, data))


def _remove(records: list[Record], layout: Layout, rng: random.Random, payload: bytes) -> None:
    if len(records) > 1:
        records.remove(_pick(records, rng))


def _reorder(records: list[Record], layout: Layout, rng: random.Random, payload: bytes) -> None:
    i, j = rng.randrange(len(records)), rng.randrange(len(records))
    records[i], records[j] = records[j], records[i]


def _value(records: list[Record], layout: Layout, rng: random.Random, payload: bytes) -> None:
    values = {
        "version": (b"999\n", b"3", b"2\n", b"4\n", b"03\n", b" 3\n", b"1\n", b"6\n"),
        ".format_version": (b"0", b"2", b"", b"1\n", b"9"),
        ".storage_alignment": (b"0", b"63", b"4096", b"x", b"-64"),
        "byteorder": (b"big", b"middle", b"LITTLE", b""),
        ".data/serialization_id": (b"1" * 39, b"x" * 40, b"", b"1" * 41),
    }
    for record in records:
        if record.name in values and rng.random() < 0.5:
            record.data = rng.choice(values[record.name])
            return


def _storage_bytes(records: list[Record], layout: Layout, rng: random.Random, payload: bytes) -> None:
    storages = [r for r in records if r.name.startswith("data/")] or records
    record = rng.choice(storages)
    record.data = rng.choice((record.data[:-1], record.data + b"\0", b"", record.data * 2, record.data[:1]))


def _header(records: list[Record], layout: Layout, rng: random.Random, payload: bytes) -> None:
    record = _pick(records, rng)
    field = rng.choice(("flags", "method", "crc", "pad", "central_name"))
    value = {
        "flags": rng.choice((0x0809, 0x0008, 0x0000, 0x0848, 0x0801)),
        "method": rng.choice((8, 12, 14, 99, 1)),
        "crc": rng.randrange(2**32),
        "pad": rng.choice((0, 1, 63, 64, 100)),
        "central_name": rng.choice(("DATA.PKL", "data.pkl", "version", "x")),
    }[field]
    setattr(record, field, value)


def _layout(records: list[Record], layout: Layout, rng: random.Random, payload: bytes) -> None:
    choice = rng.randrange(7)
    if choice == 0:
        layout.before = rng.choice((b"\0" * 64, b"PK\x03\x04", b"PYTORCH1", b"x"))
    elif choice == 1:
        layout.between = rng.choice((b"\0" * 16, b"PK\x01\x02" + b"\0" * 42))
    elif choice == 2:
        layout.comment = b"comment"
    elif choice == 3:
        layout.second_directory = True
        layout.decoy_records.append(Record("data.pkl", payload))
    elif choice == 4:
        layout.zip64 = False
    elif choice == 5:
        layout.prefix = rng.choice(
            ("", "a/b", "a\\b", "ARCHIVE", "é", "a b", ".", "p" * rng.choice((488, 489, 510, 511, 600)))
        )
    else:
        layout.second_directory = True


def _pickle(records: list[Record], layout: Layout, rng: random.Random, payload: bytes) -> None:
    for record in records:
        if record.name == "data.pkl":
            record.data = pickles.mutate(record.data, rng)


_CHANGES: list[Change] = [
    _add,
    _add,
    _remove,
    _reorder,
    _value,
    _value,
    _storage_bytes,
    _header,
    _header,
    _layout,
    _layout,
    _pickle,
]
