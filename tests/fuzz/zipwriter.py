"""A pure-Python writer of the exact zip layout torch.save writes, with knobs to write it wrong on purpose."""

import struct
import zlib
from dataclasses import dataclass, field

ALIGNMENT = 64


@dataclass
class Record:
    """One member; the fields after `data` default to what torch.save writes."""

    name: str  # relative to the top folder, e.g. "data.pkl"
    data: bytes
    flags: int | None = None  # 0x0808 (0x0800 when empty)
    method: int = 0
    crc: int | None = None  # the CRC-32 written in the directory and descriptor
    central_name: str | None = None  # a different name in the central directory than in the local header
    pad: int | None = None  # padding bytes after the "FB" field (default: to the next 64-byte boundary)


@dataclass
class Layout:
    """Archive-wide deviations; the defaults write torch.save's layout."""

    prefix: str = "archive"
    before: bytes = b""  # bytes before the first member
    between: bytes = b""  # bytes between the last member and the central directory
    comment: bytes = b""
    second_directory: bool = False  # a decoy central directory written before the real one
    decoy_records: list["Record"] = field(default_factory=list)  # what the decoy directory lists
    zip64: bool = True  # the zip64 end record and locator torch.save always writes


def write(records: list[Record], layout: Layout | None = None) -> bytes:
    layout = layout or Layout()
    out = bytearray(layout.before)
    entries = [_member(out, record, layout.prefix) for record in records]
    decoys = [_member(out, record, layout.prefix) for record in layout.decoy_records]
    out += layout.between
    if layout.second_directory:
        for entry in decoys or entries:
            out += entry
    cd_offset = len(out)
    for entry in entries:
        out += entry
    cd_size = len(out) - cd_offset
    count = len(entries)
    if layout.zip64:
        zip64_at = len(out)
        out += struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 0x031E, 45, 0, 0, count, count, cd_size, cd_offset)
        out += struct.pack("<IIQI", 0x07064B50, 0, zip64_at, 1)
    out += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, count, count, cd_size, cd_offset, len(layout.comment))
    return bytes(out + layout.comment)


def _member(out: bytearray, record: Record, prefix: str) -> bytes:
    """Append the local header, padding, data and descriptor; return the central directory entry."""
    local_at = len(out)
    name = f"{prefix}/{record.name}".encode()
    flags = record.flags if record.flags is not None else (0x0808 if record.data else 0x0800)
    pad = record.pad if record.pad is not None else -(local_at + 30 + len(name) + 4) % ALIGNMENT
    crc = record.crc if record.crc is not None else zlib.crc32(record.data)
    out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 0, flags, record.method, 0, 0, 0, 0, 0, len(name), 4 + pad)
    out += name + b"FB" + struct.pack("<H", pad) + b"Z" * pad + record.data
    if record.data:
        out += struct.pack("<IIII", 0x08074B50, crc, len(record.data), len(record.data))
    central = f"{prefix}/{record.central_name}".encode() if record.central_name else name
    size = len(record.data)
    header = (0x02014B50, 0, 0, flags, record.method, 0, 0, crc, size, size, len(central), 0, 0, 0, 0, 0, local_at)
    return struct.pack("<IHHHHHHIIIHHHHHII", *header) + central


def read(data: bytes) -> tuple[str, list[Record]]:
    """The top folder and records of an archive torch.save wrote (parsed with zipfile: test side only)."""
    import io
    import zipfile

    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        infos = archive.infolist()
        prefix = infos[0].filename.split("/", 1)[0]
        return prefix, [Record(info.filename.split("/", 1)[1], archive.read(info)) for info in infos]
