"""The records of a torch.save archive: exactly the ones it writes, in its order, each with a value it writes.

torch reads .format_version, .storage_alignment, byteorder, version and .data/serialization_id
before it unpickles anything, and an unexpected value there changes how it reads the storages
(byte swapping, offsets) or makes it refuse. Every one is read here and held to the value
torch.save 2.10-2.13 writes, so that no record can mean something to torch that it does not to
this check; a record torch.save does not write (constants.pkl, .data/version, an unreferenced
storage) is refused rather than ignored.
"""

import re
from dataclasses import dataclass

from resumeproof.common.weights_only.container import Archive, Member
from resumeproof.common.weights_only.errors import Refusal, quote
from resumeproof.common.weights_only.limits import LIMITS

PICKLE = "data.pkl"
HEAD = (PICKLE, ".format_version", ".storage_alignment", "byteorder")  # written before the storages
TAIL = ("version", ".data/serialization_id")  # written when the archive is closed
# The only values torch.save 2.10-2.13 writes (kProducedFileFormatVersion 3 since torch 1.x;
# .format_version 1; the default storage alignment; the machine's byte order).
VALUES = {
    "version": (b"3\n",),
    ".format_version": (b"1",),
    ".storage_alignment": (b"64",),
    "byteorder": (b"little", b"big"),
}
SERIALIZATION_ID = re.compile(rb"[0-9]{40}")  # two 20-digit zero-padded numbers


@dataclass(frozen=True)
class Records:
    pickle: bytes  # data.pkl
    storage_bytes: tuple[int, ...]  # the size of data/0, data/1, ... in order
    byteorder: str


def read(archive: Archive) -> Records:
    members = archive.members
    storages = len(members) - len(HEAD) - len(TAIL)
    expected = [*HEAD, *(f"data/{key}" for key in range(max(storages, 0))), *TAIL]
    names = [member.name for member in members]
    if names != expected:
        raise Refusal(f"records are not the ones torch.save writes, in its order: {_first_difference(names, expected)}")
    by_name = {member.name: member for member in members}
    for name, allowed in VALUES.items():
        if _content(by_name[name]) not in allowed:
            raise Refusal(f"record {name} holds {quote(_content(by_name[name]))}, not what torch.save writes")
    if not SERIALIZATION_ID.fullmatch(_content(by_name[".data/serialization_id"])):
        raise Refusal("record .data/serialization_id is not the 40 digits torch.save writes")
    data_pkl = by_name[PICKLE]
    if data_pkl.content is None or data_pkl.size > LIMITS.pickle_bytes:
        raise Refusal(f"data.pkl of {data_pkl.size} bytes is over this check's {LIMITS.pickle_bytes}")
    return Records(
        pickle=data_pkl.content,
        storage_bytes=tuple(member.size for member in members[len(HEAD) : len(HEAD) + storages]),
        byteorder=_content(by_name["byteorder"]).decode("ascii"),
    )


def _content(member: Member) -> bytes:
    return member.content if member.content is not None else b""


def _first_difference(names: list[str], expected: list[str]) -> str:
    for index, (name, want) in enumerate(zip(names, expected, strict=False)):
        if name != want:
            return f"member {index} is {quote(name)} where torch.save writes {want!r}"
    return f"{len(names)} members where torch.save writes {len(expected)} for these storages"
