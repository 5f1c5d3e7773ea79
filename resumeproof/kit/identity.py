"""What a checkpoint records about the run that wrote it: code and data fingerprints, and versions.

A checkpoint from other code, other data or other Python/torch/NumPy versions is refused unless
the user accepts it explicitly, and then the differences are recorded where the comparison sees
them (a resume from a foreign checkpoint must never pass as concordant with an unchanged one).
"""

import hashlib
import platform
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import torch


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
