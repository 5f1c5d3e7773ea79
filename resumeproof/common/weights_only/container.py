"""The zip container, parsed byte by byte: only the exact layout torch.save writes is accepted.

torch reads the archive with miniz, which trusts the offsets the end records state, matches names
case-insensitively and does not verify CRC-32s; Python's zipfile adjusts for bytes before the
archive and matches names exactly. A file on which two readers can disagree is how a check reads
one data.pkl while torch loads another. So nothing here is interpreted generously: every field
must hold the value torch.save (miniz 3.0.2 behind PyTorchStreamWriter) writes, members must tile
the file from byte 0 to the central directory with no gap, the central directory must end where
the zip64 end record starts, and every member's CRC-32 is verified. Then there is one reading.
"""

import struct
from dataclasses import dataclass

from resumeproof.common.weights_only.errors import Refusal, quote
from resumeproof.common.weights_only.limits import LIMITS
from resumeproof.common.weights_only.source import Source

ALIGNMENT = 64  # torch.save pads every record's data to this (.storage_alignment, checked in records.py)
STORED_FLAGS = 0x0808  # UTF-8 names, sizes in a data descriptor after the data
EMPTY_FLAGS = 0x0800  # a record of 0 bytes has no data descriptor
PADDING_ID = b"FB"  # the extra field torch.save pads with, filled with b"Z"
MAX_NAME = 511  # torch lists names into a 512-byte buffer (MZ_ZIP_MAX_ARCHIVE_FILENAME_SIZE): longer ones are cut

_EOCD = struct.Struct("<IHHHHIIH")
_LOCATOR = struct.Struct("<IIQI")
_ZIP64 = struct.Struct("<IQHHIIQQQQ")
_CENTRAL = struct.Struct("<IHHHHHHIIIHHHHHII")
_LOCAL = struct.Struct("<IHHHHHIIIHH")
_DESCRIPTOR = struct.Struct("<IIII")
EOCD_SIG, LOCATOR_SIG, ZIP64_SIG = 0x06054B50, 0x07064B50, 0x06064B50
CENTRAL_SIG, LOCAL_SIG, DESCRIPTOR_SIG = 0x02014B50, 0x04034B50, 0x08074B50
ZIP64_MADE_BY, ZIP64_NEEDED = 0x031E, 45  # what miniz writes in the zip64 end record
TAIL = _ZIP64.size + _LOCATOR.size + _EOCD.size


@dataclass(frozen=True)
class Member:
    name: str  # relative to the archive's top folder, e.g. "data.pkl" or "data/0"
    offset: int  # of its first data byte in the file
    size: int
    content: bytes | None  # kept for every member except storages, whose bytes are only CRC-checked


@dataclass(frozen=True)
class Archive:
    prefix: str  # the top folder, as torch finds it: the first central directory name up to "/"
    members: tuple[Member, ...]  # in file order, which is central directory order


@dataclass(frozen=True)
class _Entry:
    name: bytes
    flags: int
    crc: int
    size: int
    local: int


def read(source: Source) -> Archive:
    """Parse the whole container and verify every CRC-32; refuse anything torch.save would not write."""
    if source.size < TAIL + _LOCAL.size:
        raise Refusal(f"not a torch zip archive ({source.size} bytes is too short)")
    if source.size > LIMITS.archive_bytes:
        raise Refusal(
            "an archive of 4 GiB or more: torch.save writes zip64 fields there, which this check does not read"
        )
    count, cd_size, cd_offset = _end_records(source)
    entries = _central_directory(source, count, cd_offset, cd_size)
    prefix = _prefix(entries)
    members, end = [], 0
    for entry in entries:
        member = _member(source, entry, end, prefix, cd_offset)
        members.append(member)
        end = member.offset + member.size + (_DESCRIPTOR.size if member.size else 0)
    if end != cd_offset:
        raise Refusal(f"{cd_offset - end} bytes between the last member and the central directory")
    return Archive(prefix=prefix, members=tuple(members))


def _end_records(source: Source) -> tuple[int, int, int]:
    """The EOCD at the very end (no comment), the zip64 locator and record right before it, agreeing."""
    eocd_at = source.size - _EOCD.size
    sig, disk, cd_disk, on_disk, total, cd_size, cd_offset, comment = _EOCD.unpack(source.read(eocd_at, _EOCD.size))
    if sig != EOCD_SIG:
        raise Refusal("not a torch zip archive (no end of central directory record at the end of the file)")
    if disk or cd_disk or comment or on_disk != total:
        raise Refusal("the end of central directory record is not one torch.save writes (disks or comment)")
    if not 0 < total <= LIMITS.members:
        raise Refusal(f"{total} zip records (torch.save writes 7 and more, and this check reads at most 65,534)")
    zip64_at = eocd_at - _LOCATOR.size - _ZIP64.size
    loc_sig, loc_disk, loc_offset, disks = _LOCATOR.unpack(source.read(eocd_at - _LOCATOR.size, _LOCATOR.size))
    if loc_sig != LOCATOR_SIG or loc_disk or disks != 1 or loc_offset != zip64_at:
        raise Refusal("no zip64 end record locator right before the end record, as torch.save writes it")
    fields = _ZIP64.unpack(source.read(zip64_at, _ZIP64.size))
    if fields != (ZIP64_SIG, 44, ZIP64_MADE_BY, ZIP64_NEEDED, 0, 0, total, total, cd_size, cd_offset):
        raise Refusal("the zip64 end record disagrees with the end record, or is not one torch.save writes")
    if cd_offset + cd_size != zip64_at:
        raise Refusal("the central directory does not end where the end records start (a second directory?)")
    return total, cd_size, cd_offset


def _central_directory(source: Source, count: int, offset: int, size: int) -> list[_Entry]:
    data, at, entries = source.read(offset, size), 0, list[_Entry]()
    for _ in range(count):
        if at + _CENTRAL.size > size:
            raise Refusal("the central directory holds fewer entries than the end record states")
        fields = _CENTRAL.unpack_from(data, at)
        sig, made_by, needed, flags, method, time, date, crc, csize, usize, name_len, extra_len = fields[:12]
        comment_len, disk, internal, external, local = fields[12:]
        name = data[at + _CENTRAL.size : at + _CENTRAL.size + name_len]
        if sig != CENTRAL_SIG or len(name) != name_len:
            raise Refusal(f"central directory entry {len(entries)} is malformed")
        if (made_by, needed, method, time, date, extra_len, comment_len, disk, internal, external) != (0,) * 10:
            raise Refusal(
                f"central directory entry {quote(name)} has fields torch.save does not write"
                " (compression, encryption, extra fields, comment or attributes)"
            )
        if csize != usize or flags != (STORED_FLAGS if usize else EMPTY_FLAGS):
            raise Refusal(f"member {quote(name)} is compressed, encrypted or flagged as torch.save never writes it")
        entries.append(_Entry(name=name, flags=flags, crc=crc, size=usize, local=local))
        at += _CENTRAL.size + name_len
    if at != size:
        raise Refusal(f"{size - at} bytes after the central directory entries the end record counts")
    return entries


def _prefix(entries: list[_Entry]) -> str:
    """torch looks every record up under the first entry's top folder, case-insensitively."""
    first = entries[0].name
    top, slash, _ = first.partition(b"/")
    if not slash or not top or not all(0x20 <= c <= 0x7E and c != 0x5C for c in top):
        raise Refusal(f"first member {quote(first)} is not in a printable top folder, as torch.save names it")
    folded = set()
    for entry in entries:
        if not entry.name.startswith(top + b"/"):
            raise Refusal(f"member {quote(entry.name)} is outside the archive's top folder {quote(top)}")
        if not all(0x20 <= c <= 0x7E for c in entry.name) or len(entry.name) > MAX_NAME:
            raise Refusal(f"member name {quote(entry.name)} is not printable ASCII of at most {MAX_NAME} characters")
        if entry.name.lower() in folded:  # miniz (flags 0) compares names ignoring ASCII case
            raise Refusal(f"two members named {quote(entry.name)} when case is ignored, as torch's reader does")
        folded.add(entry.name.lower())
    return top.decode("ascii")


def _member(source: Source, entry: _Entry, expected_at: int, prefix: str, limit: int) -> Member:
    """One local header, its padding, its data and data descriptor, exactly where the last one ended."""
    if entry.local != expected_at:
        raise Refusal(
            f"member {quote(entry.name)} starts at byte {entry.local}, not {expected_at} where"
            " the previous one ends (bytes before or between members)"
        )
    header = _LOCAL.unpack(source.read(entry.local, _LOCAL.size))
    sig, needed, flags, method, time, date, crc, csize, usize, name_len, extra_len = header
    if (sig, needed, flags, method, time, date, crc, csize, usize) != (LOCAL_SIG, 0, entry.flags, 0, 0, 0, 0, 0, 0):
        raise Refusal(f"local header of {quote(entry.name)} differs from its central directory entry or torch.save's")
    start = entry.local + _LOCAL.size
    pad = -(start + len(entry.name) + 4) % ALIGNMENT
    expected = entry.name + PADDING_ID + struct.pack("<H", pad) + b"Z" * pad
    if name_len != len(entry.name) or extra_len != 4 + pad or source.read(start, name_len + extra_len) != expected:
        raise Refusal(f"local name or padding of {quote(entry.name)} is not what torch.save writes")
    offset = start + name_len + extra_len
    if offset + entry.size > limit:
        raise Refusal(f"member {quote(entry.name)} reaches into the central directory or past the file")
    if source.crc32(offset, entry.size) != entry.crc:
        raise Refusal(f"member {quote(entry.name)} does not match its CRC-32")
    if entry.size:
        descriptor = _DESCRIPTOR.unpack(source.read(offset + entry.size, _DESCRIPTOR.size))
        if descriptor != (DESCRIPTOR_SIG, entry.crc, entry.size, entry.size):
            raise Refusal(f"data descriptor of {quote(entry.name)} disagrees with its central directory entry")
    name = entry.name.decode("ascii")[len(prefix) + 1 :]
    keep = not name.startswith("data/") and entry.size <= LIMITS.pickle_bytes
    return Member(name=name, offset=offset, size=entry.size, content=source.read(offset, entry.size) if keep else None)
