"""The classic flat file: its layout, what it cannot hold, and reading it without torch (`flat inspect`).

Little-endian: [int32 step][int32 n_params][n_params float32 weights][n_params float32 m]
[n_params float32 v], parameters in the model's parameter order: exactly 8 + 12 * n_params bytes.
resumeproof.kit.flat exports one from a checkpoint and restores one into a model (both need torch).
NumPy is imported only where arrays are made, so that importing this module (the verifier names
LOST) loads none.
"""

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from resumeproof.common import fingerprint
from resumeproof.common.errors import ResumeproofError

if TYPE_CHECKING:
    import numpy as np

HEADER = struct.Struct("<ii")
LOST = "weights and Adam moments only, in float32: no scheduler, generators, data position, step counter or history"


class FlatError(ResumeproofError):
    """A flat file that cannot be written or read."""


@dataclass(frozen=True)
class Flat:
    step: int
    weights: "np.ndarray"  # float32, n_params
    m: "np.ndarray"
    v: "np.ndarray"


def size(n_params: int) -> int:
    return HEADER.size + 12 * n_params


def encode(flat: Flat) -> bytes:
    import numpy as np

    arrays = [np.asarray(a, dtype="<f4") for a in (flat.weights, flat.m, flat.v)]
    return HEADER.pack(flat.step, len(flat.weights)) + b"".join(a.tobytes() for a in arrays)


def decode(path: Path, data: bytes) -> Flat:
    import numpy as np

    if len(data) < HEADER.size:
        raise FlatError(f"{path}: {len(data)} bytes, shorter than the 8-byte header")
    step, n = HEADER.unpack_from(data)
    if n < 0 or step < 0 or len(data) != size(n):
        raise FlatError(f"{path}: header says step {step}, {n} parameters ({size(n)} bytes); the file has {len(data)}")
    arrays = np.frombuffer(data, dtype="<f4", offset=HEADER.size).reshape(3, n)
    return Flat(step, *(a.copy() for a in arrays))


def read(path: Path) -> Flat:
    try:
        data = path.read_bytes()
        fingerprint.verify(path, data)
    except (OSError, fingerprint.FingerprintError) as err:
        raise FlatError(str(err)) from None
    return decode(path, data)


def describe(path: Path) -> list[str]:
    """The header and sizes of a flat file, its length checked, and what it lacks."""
    flat = read(path)
    n = len(flat.weights)
    lines = [f"{path}: step {flat.step}, {n} parameters, {size(n)} bytes = 8 + 12 x {n} (length checked)"]
    for name, values in (("weights", flat.weights), ("m", flat.m), ("v", flat.v)):
        lines.append(f"  {name:8s} float32 x {n}: min {values.min():.6g}, max {values.max():.6g}")
    return [*lines, f"  not in it: {LOST}"]
