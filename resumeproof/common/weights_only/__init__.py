"""Check, without importing torch, that torch.load(path, map_location="cpu", weights_only=True) loads a file.

The promise: whatever torch 2.13's weights_only loader refuses, `check` refuses too; and where
this check's reading of a file could differ from torch's in any way, it refuses. It reads the zip
container byte by byte (container.py), every record (records.py), and runs data.pkl on a pickle
machine at least as strict as torch's (unpickler.py) that calls only argument checks, never
code from the file. docs/weights-only.md gives the rules, what each side relies on, and the
differential fuzzing that holds the check to torch.
"""

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from resumeproof.common.weights_only import container, records, unpickler
from resumeproof.common.weights_only.errors import Refusal, WeightsOnlyError, one_line
from resumeproof.common.weights_only.scan import globals_in
from resumeproof.common.weights_only.source import Source
from resumeproof.common.weights_only.tensors import Storages
from resumeproof.common.weights_only.walk import walk

READ_WHOLE = 16 << 20  # files up to this size are read into memory at once; larger ones by offset
INTERNAL = "internal error in the weights_only check"  # the check's own bug: refused all the same, said as such
LOG = logging.getLogger(__name__)  # `--debug` shows it: the traceback of the check's own bug
__all__ = ["Checked", "WeightsOnlyError", "check", "pickle_globals"]


@dataclass(frozen=True, kw_only=True)
class Checked:
    """What an accepted file holds."""

    tensors: int  # distinct tensors, parameters included
    storages: int  # storage records
    storage_bytes: int  # their total size
    depth: int  # containers nested in containers


def check(path: Path, data: bytes | None = None) -> Checked:
    """Check `path` (or its bytes, already read); raise WeightsOnlyError, naming it, if it is refused."""
    try:
        with _source(path, data) as source:
            archive = container.read(source)
        found = records.read(archive)
        storages = Storages(found.storage_bytes)
        shape = walk(unpickler.load(found.pickle, storages))
        storages.finish()
        return Checked(
            tensors=shape.tensors,
            storages=len(found.storage_bytes),
            storage_bytes=sum(found.storage_bytes),
            depth=shape.depth,
        )
    except Refusal as err:
        reason = str(err)
    except OSError as err:
        reason = f"cannot be read ({err.strerror or type(err).__name__})"
    except MemoryError:
        reason = "out of memory while checking it; refused"
    except RecursionError:
        reason = "nested too deeply for the check; refused"
    except Exception as err:  # the check's own bug: a refusal too (fail closed), never a crash of its caller
        LOG.debug("%s: %s", path, INTERNAL, exc_info=err)
        raise WeightsOnlyError(one_line(f"{path}: {INTERNAL} ({type(err).__name__}); refused")) from err
    raise WeightsOnlyError(one_line(f"{path}: {reason}")) from None


def pickle_globals(data: bytes) -> list[str]:
    """The globals a plain pickle stream references, as 'module.name', found without running it."""
    try:
        return globals_in(data)
    except Refusal as err:
        raise WeightsOnlyError(one_line(f"pickle data: {err}")) from None


@contextmanager
def _source(path: Path, data: bytes | None) -> Iterator[Source]:
    if data is not None:
        yield Source(size=len(data), data=bytes(data))
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        source = Source(size=os.fstat(fd).st_size, fd=fd)
        # A small file is read in one call rather than a few per member: the trainer's takes 1 read, not 100.
        yield Source(size=source.size, data=source.read(0, source.size)) if source.size <= READ_WHOLE else source
    finally:
        os.close(fd)
