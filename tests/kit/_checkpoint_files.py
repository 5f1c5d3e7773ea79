"""What the checkpoint tests share: private copies of the reference trainer's checkpoint, and ways to damage one.

Written independently of the product code where they stand for an attacker or a broken disk (the
sidecar, the zip archive); through `checkpoint.save` where only the content may be wrong.
"""

import copy
import hashlib
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from resumeproof.kit import checkpoint

CHECKPOINT, SIDECAR = "checkpoint.pt", "checkpoint.pt.sha256"


def write_sidecar(path: Path) -> str:
    """A valid sha256sum line for the bytes now in `path`, written independently of the product code."""
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    path.with_name(path.name + ".sha256").write_text(f"{digest}  {path.name}\n", encoding="ascii")
    return digest


def save_tampered(directory: Path, state: dict[str, Any]) -> Path:
    """`state` written by checkpoint.save, so that its fingerprint is valid and only the content is wrong."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / CHECKPOINT
    checkpoint.save(path, state)
    return path


def files_in(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file()} if directory.is_dir() else {}


def put(keys: tuple[Any, ...], value: Any) -> Callable[[dict[str, Any]], None]:
    """A tampering: state[k0][k1]...[kn] = value."""

    def tamper(state: dict[str, Any]) -> None:
        for key in keys[:-1]:
            state = state[key]
        state[keys[-1]] = copy.deepcopy(value)

    return tamper


def replace_pickle(src: Path, dst: Path, data_pkl: bytes) -> None:
    """Copy a torch zip archive, with its data.pkl record replaced by `data_pkl`."""
    with zipfile.ZipFile(src) as old, zipfile.ZipFile(dst, "w") as new:
        for info in old.infolist():
            new.writestr(info, data_pkl if info.filename.endswith("/data.pkl") else old.read(info))
