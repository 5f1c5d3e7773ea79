"""The bounds every file is held to, so that no file can cost the check more than they allow."""

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class Limits:
    """Far above what any checkpoint torch.save writes needs; a file beyond them is refused, not read."""

    pickle_bytes: int = 32 << 20  # data.pkl is read whole into memory; the trainer's is a few KB
    work: int = 8_000_000  # opcodes run, elements copied and tuple elements hashed, summed: seconds at most
    depth: int = 100  # containers nested in containers (a state dict nests about 5 deep)
    stack: int = 2_000  # values on the stack above the last MARK: the pickler batches items by 1,000
    marks: int = 400  # MARKs open at once: about two per level of nesting
    dims: int = 64  # dimensions of one tensor
    extent: int = 1 << 62  # sizes, strides, element counts: far inside int64, so nothing overflows
    members: int = 65_534  # zip records; from 65,535 on miniz writes a zip64 count
    archive_bytes: int = 0xFFFF_FFFF  # from 4 GiB on torch.save writes zip64 fields this check does not read


LIMITS = Limits()
