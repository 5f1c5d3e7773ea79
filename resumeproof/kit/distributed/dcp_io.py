"""torch.distributed.checkpoint (DCP) saved and loaded without its two code-execution paths of torch 2.13.

Stock torch 2.13 reads a DCP directory with two unsafe calls: FileSystemReader.read_metadata runs
`pickle.load` on `.metadata` (on every rank, and a tampered file runs its payload), and
DefaultLoadPlanner.load_bytes runs `torch.load(weights_only=False)` on every non-tensor item.
Here `load` goes through the public extension points of dcp.load instead:

- read_metadata, once, before dcp.load starts: the torch-free check of common/dcp_check.py first (every
  global of the pickle in the allowlist of common/dcp_files.py, no non-tensor item, the structure, the
  data files), then an unpickler that resolves those names and nothing else. SafeReader hands that
  metadata to dcp.load; dcp.load's fallback to a rank's own `__R.metadata` is refused: a directory
  without the global `.metadata` never loads.
- SafePlanner.load_bytes refuses every non-tensor item. Non-tensor state travels as JSON text in a
  uint8 tensor (`json_tensor`), which loads as a tensor with weights_only=True.
"""

import importlib
import io
import json
import pathlib
import pickle
import warnings
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.api import CheckpointException
from torch.distributed.checkpoint.default_planner import DefaultLoadPlanner
from torch.distributed.checkpoint.filesystem import FileSystemReader, FileSystemWriter
from torch.distributed.checkpoint.metadata import Metadata, StorageMeta
from torch.distributed.checkpoint.planner import ReadItem

from resumeproof.common import dcp_check, dcp_files
from resumeproof.kit.checkpoint import CheckpointError


def _resolve(name: str) -> Any:
    module, attribute = dcp_files.split(name)
    if module == "pathlib._local":  # the name Python 3.13 records for the same class
        return pathlib.PosixPath
    return getattr(importlib.import_module(module), attribute, None)


ALLOWED = {name: found for name in dcp_files.GLOBALS if (found := _resolve(name)) is not None}


def read_metadata(folder: Path) -> Metadata:
    """`folder/.metadata`, checked without torch and then unpickled with the allowlisted names only."""
    path = folder / dcp_files.METADATA
    try:
        data = path.read_bytes()
        dcp_check.check_files(folder, dcp_check.parse(data, path))
        metadata = dcp_files.unpickle(data, ALLOWED)
    except FileNotFoundError:
        raise CheckpointError(
            f"{folder}: no {dcp_files.METADATA}: the save did not finish; refusing to resume"
        ) from None
    except (OSError, dcp_check.DcpError, pickle.UnpicklingError) as err:
        raise CheckpointError(f"{err}; refusing to resume") from None
    if type(metadata) is not Metadata:
        raise CheckpointError(f"{path}: holds a {type(metadata).__name__}, not DCP metadata; refusing to resume")
    return metadata


class SafeReader(FileSystemReader):
    """FileSystemReader whose read_metadata never runs pickle.load on the file's own terms: it hands out
    the metadata read_metadata already checked and unpickled."""

    def __init__(self, folder: Path, metadata: Metadata) -> None:
        super().__init__(folder)
        self.checked = metadata

    def read_metadata(self, *args: Any, **kwargs: Any) -> Metadata:
        if kwargs.get("rank") is not None:
            raise CheckpointError(f"{self.path}: no global {dcp_files.METADATA}; a rank's own metadata is not accepted")
        metadata = self.checked
        metadata.storage_meta = metadata.storage_meta or StorageMeta()
        metadata.storage_meta.load_id = self.load_id
        return metadata


class SafePlanner(DefaultLoadPlanner):
    """DefaultLoadPlanner without `torch.load(weights_only=False)`: non-tensor items are refused."""

    def load_bytes(self, read_item: ReadItem, value: io.BytesIO) -> None:
        raise CheckpointError(f"{read_item.dest_index.fqn}: a non-tensor (pickled) item; only tensors are loaded")


def save(state: dict[str, Any], folder: Path) -> None:
    """dcp.save into `folder` (every rank): data files first, `.metadata` last, by the coordinator."""
    try:
        dcp.save(state, storage_writer=FileSystemWriter(folder))
    except CheckpointException as err:  # a BaseException carrying each rank's failure
        raise CheckpointError(f"{folder}: could not write the DCP checkpoint ({_first(err)})") from None


def load(state: dict[str, Any], folder: Path, metadata: Metadata | None = None) -> None:
    """dcp.load in place (every rank, or one process without a process group: DCP's no_dist, which reads
    whatever chunks the targets need, every rank's shards), through the safe reader and planner;
    `metadata` is what read_metadata(folder) returned, when the caller has it already."""
    if metadata is None:  # read here, before any collective, so that a refusal is this error on every rank
        metadata = read_metadata(folder)
    alone = not (dist.is_available() and dist.is_initialized())
    try:
        with warnings.catch_warnings():  # dcp.load warns that no_dist assumes one process: it is one, by design
            warnings.filterwarnings("ignore", "torch.distributed is disabled", UserWarning)
            dcp.load(state, storage_reader=SafeReader(folder, metadata), planner=SafePlanner(), no_dist=alone)
    except CheckpointException as err:
        reason = _first(err)
        raise CheckpointError(f"{folder}: could not load the DCP checkpoint ({reason}); refusing to resume") from None


def read_item(folder: Path, fqn: str) -> torch.Tensor:
    """One whole tensor item, read by this rank alone (rank 0 peeking at a checkpoint's progress)."""
    layout = dcp_check.read(folder)
    item = next((i for i in layout.items if i.fqn == fqn), None)
    if item is None:
        raise CheckpointError(f"{folder}: holds no {fqn}; refusing to resume")
    with open(folder / item.file, "rb") as f:
        f.seek(item.offset)
        data = f.read(item.length)
    return torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)


def json_tensor(value: Any) -> torch.Tensor:
    """JSON text as a uint8 tensor. Python's JSON writes every float so that it reads back bit-identical,
    and its ints are exact at any size (NumPy's 128-bit PCG64 state)."""
    return torch.frombuffer(bytearray(json.dumps(value, sort_keys=True).encode()), dtype=torch.uint8).clone()


def from_json_tensor(tensor: torch.Tensor) -> Any:
    return json.loads(tensor.numpy().tobytes().decode())


def _first(err: CheckpointException) -> str:
    failures = list(err.failures.values())
    if not failures:
        return str(err)
    reason = failures[0][0] if isinstance(failures[0], tuple) else failures[0]
    return " ".join(f"{type(reason).__name__}: {reason}".split())[:300]
