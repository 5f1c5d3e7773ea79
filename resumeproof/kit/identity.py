"""What a checkpoint records about the run that wrote it: code and data fingerprints, and versions; and the GPU.

A checkpoint from other code, other data or other Python/torch/NumPy versions is refused unless
the user accepts it explicitly, and then the differences are recorded where the comparison sees
them (a resume from a foreign checkpoint must never pass as concordant with an unchanged one).
`device_identity` describes the GPU a CUDA run computed on, for the summary's `meta`: bit-exact
results hold on one GPU model, driver, CUDA and cuDNN, with the determinism settings it lists.
"""

import ctypes
import hashlib
import os
import platform
import re
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from resumeproof.common.errors import ResumeproofError

NVIDIA_DRIVER_FILE = Path("/proc/driver/nvidia/version")  # Linux: the loaded kernel module's release
_DRIVER_RELEASE = re.compile(r"NVRM version:.*?\s(\d+\.\d+(?:\.\d+)?)\s")
# The CUDA driver API's library, which every CUDA process has loaded (dlopen of it again returns the same handle).
CUDA_DRIVER_LIBRARY = "nvcuda.dll" if sys.platform == "win32" else "libcuda.so.1"


def versions() -> dict[str, str]:
    return {"python": platform.python_version(), "torch": str(torch.__version__), "numpy": np.__version__}


def files_sha256(paths: Iterable[Path]) -> str:
    """One sha256 over several files, each preceded by its name: what decides what a run computes."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def identity(code: Iterable[Path], data: Iterable[Path]) -> dict[str, str]:
    return {"code_sha256": files_sha256(code), "data_sha256": files_sha256(data)}


def device_identity(device: str | torch.device) -> dict[str, Any] | None:
    """The GPU a run computes on (`device`: "cuda", "cuda:1" or a torch.device): name, compute capability, driver,
    CUDA and cuDNN versions and the determinism settings in force; None for a CPU run. Starts CUDA."""
    where = torch.device(device)
    if where.type != "cuda":
        return None
    if not torch.cuda.is_available():
        raise ResumeproofError(f"device {str(device)!r}: CUDA is not available (torch {torch.__version__})")
    index = where.index if where.index is not None else torch.cuda.current_device()
    properties = torch.cuda.get_device_properties(index)
    return {
        "name": properties.name,
        "index": index,
        "devices": torch.cuda.device_count(),
        "capability": f"{properties.major}.{properties.minor}",
        "driver": _driver_release(),
        "driver_cuda": _driver_cuda_version(),
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
        "deterministic": {
            "algorithms": torch.are_deterministic_algorithms_enabled(),
            "cudnn_deterministic": bool(torch.backends.cudnn.deterministic),
            "cudnn_benchmark": bool(torch.backends.cudnn.benchmark),
            "matmul_tf32": bool(torch.backends.cuda.matmul.allow_tf32),
            "cudnn_tf32": bool(torch.backends.cudnn.allow_tf32),
            "cublas_workspace_config": os.environ.get("CUBLAS_WORKSPACE_CONFIG"),
        },
    }


def _driver_release() -> str | None:
    """The NVIDIA driver's release (550.54.15) as the loaded kernel module reports it; None where unreadable."""
    try:
        found = _DRIVER_RELEASE.search(NVIDIA_DRIVER_FILE.read_text())
    except OSError:
        return None
    return found.group(1) if found else None


def _driver_cuda_version() -> str | None:
    """The newest CUDA the driver supports, from the driver API's `cuDriverGetVersion` (12080 -> "12.8"), read
    through ctypes: torch has no public call for it. Any failure (no library, no symbol, an error code) reads as
    unknown (None)."""
    try:
        driver = ctypes.CDLL(CUDA_DRIVER_LIBRARY)
        get = driver.cuDriverGetVersion
        get.argtypes, get.restype = [ctypes.POINTER(ctypes.c_int)], ctypes.c_int
        version = ctypes.c_int(0)
        status = get(ctypes.pointer(version))
    except (OSError, AttributeError, TypeError, ValueError):
        return None
    if status != 0 or version.value <= 0:  # CUDA_SUCCESS is 0
        return None
    return f"{version.value // 1000}.{version.value % 1000 // 10}"
