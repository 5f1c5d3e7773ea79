"""The files torch.distributed.checkpoint (DCP) writes, and the only globals their `.metadata` may name.

Torch-free names and one allowlist unpickler, shared by the trainer (kit/distributed/dcp_io.py), which
maps each name to the object it means, and by the torch-free check (common/dcp_check.py), which checks a file's
globals against them and then unpickles it into inert stubs. The list is what torch 2.13's
FileSystemWriter writes (found by recording every global of real DDP and FSDP2 checkpoints and by
reading metadata.py and filesystem.py): its metadata dataclasses, torch.Size, the dtypes, the
strided layout and the path of the checkpoint. Anything else (builtins, os, a method of
pathlib.Path ...) is refused.
"""

import io
import pickle
import re
from collections.abc import Mapping
from typing import Any

METADATA = ".metadata"  # pickled by the coordinator after every rank wrote its data: DCP's commit rule
DATA_FILE = re.compile(r"__(\d+)_(\d+)\.distcp")  # one per rank: torch.save archives end to end
MAX_METADATA_BYTES = 64 << 20  # a real one is a few KB per hundred tensors

_MD = "torch.distributed.checkpoint.metadata"
METADATA_CLASS = f"{_MD}.Metadata"
STORAGE_META = f"{_MD}.StorageMeta"
INDEX = f"{_MD}.MetadataIndex"
TENSOR_ITEM = f"{_MD}.TensorStorageMetadata"
CHUNK = f"{_MD}.ChunkStorageMetadata"
PROPERTIES = f"{_MD}.TensorProperties"
MEMORY_FORMAT = f"{_MD}._MEM_FORMAT_ENCODING"
STORAGE_INFO = "torch.distributed.checkpoint.filesystem._StorageInfo"
SIZE = "torch.Size"
LAYOUT = "torch.serialization._get_layout"  # torch.strided pickles as _get_layout("torch.strided")
PATHS = ("pathlib.PosixPath", "pathlib._local.PosixPath")  # StorageMeta.checkpoint_id; 3.13+ names the second
# A non-tensor item ("bytes"): stock dcp.load reads it with torch.load(weights_only=False). DCP
# writes this class, but a checkpoint that names it is refused by both sides.
BYTES_ITEM = f"{_MD}.BytesStorageMetadata"

# torch.<name> for every dtype of torch 2.13 (tests/common/test_dcp_files.py holds the list to the installed torch).
DTYPES = (
    "bfloat16", "bits16", "bits1x8", "bits2x4", "bits4x2", "bits8", "bool", "complex128", "complex32", "complex64",
    "float16", "float32", "float4_e2m1fn_x2", "float64", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2",
    "float8_e5m2fnuz", "float8_e8m0fnu", "int1", "int16", "int2", "int3", "int32", "int4", "int5", "int6", "int64",
    "int7", "int8", "qint32", "qint8", "quint2x4", "quint4x2", "quint8", "uint1", "uint16", "uint2", "uint3", "uint32",
    "uint4", "uint5", "uint6", "uint64", "uint7", "uint8",
)  # fmt: skip

CLASSES = (METADATA_CLASS, STORAGE_META, INDEX, TENSOR_ITEM, CHUNK, PROPERTIES, MEMORY_FORMAT, STORAGE_INFO)
GLOBALS = frozenset((*CLASSES, SIZE, LAYOUT, *PATHS, *(f"torch.{name}" for name in DTYPES)))


def split(name: str) -> tuple[str, str]:
    """'torch.distributed.checkpoint.metadata.Metadata' -> (module, attribute), as pickle names them."""
    module, _, attribute = name.rpartition(".")
    return module, attribute


def unpickle(data: bytes, allowed: Mapping[str, Any]) -> Any:
    """`data` unpickled with `allowed` (full name -> object) as its only globals and no persistent ids."""
    return _Allowlisted(io.BytesIO(data), allowed).load()


class _Allowlisted(pickle.Unpickler):
    def __init__(self, file: io.BytesIO, allowed: Mapping[str, Any]) -> None:
        super().__init__(file)
        self.allowed = allowed

    def find_class(self, module: str, name: str) -> Any:
        found = self.allowed.get(f"{module}.{name}")
        if found is None:
            raise pickle.UnpicklingError(f"global {module}.{name} is not allowed")
        return found

    def persistent_load(self, pid: Any) -> Any:
        raise pickle.UnpicklingError("persistent ids are not allowed")
