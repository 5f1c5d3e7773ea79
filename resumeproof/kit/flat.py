"""The classic flat file of weights and Adam moments, and why it is not a checkpoint.

    resumeproof flat export runs/a/checkpoint.pt runs/a/flat.bin
    resumeproof flat inspect runs/a/flat.bin

Layout, little-endian: [int32 step][int32 n_params][n_params float32 weights][n_params float32 m]
[n_params float32 v], parameters in the model's parameter order: exactly 8 + 12 * n_params bytes
(404 for the reference model's 33). It holds no scheduler, no generators, no data position, no
history, and rounds everything to float32: `verify_resume.py --faults flat` shows that a resume
from it diverges.
"""

import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from resumeproof.common import fingerprint
from resumeproof.common.errors import ResumeproofError
from resumeproof.common.flatfile import HEADER, LOST, size


class FlatError(ResumeproofError):
    """A flat file that cannot be written or read."""


@dataclass(frozen=True)
class Flat:
    step: int
    weights: np.ndarray  # float32, n_params
    m: np.ndarray
    v: np.ndarray


def encode(flat: Flat) -> bytes:
    arrays = [np.asarray(a, dtype="<f4") for a in (flat.weights, flat.m, flat.v)]
    return HEADER.pack(flat.step, len(flat.weights)) + b"".join(a.tobytes() for a in arrays)


def decode(path: Path, data: bytes) -> Flat:
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


def from_checkpoint(path: Path) -> Flat:
    """Weights and Adam moments of a checkpoint in the kit's standard layout, in the model's parameter order."""
    import torch  # the export and the restore need it, `inspect` does not

    try:
        data = path.read_bytes()
        fingerprint.verify(path, data)
        state = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
        model, moments = state["model"], state["optimizer"]["state"]
        weights = torch.cat([t.flatten() for t in model.values()])
        m = torch.cat([moments[i]["exp_avg"].flatten() for i in range(len(model))])
        v = torch.cat([moments[i]["exp_avg_sq"].flatten() for i in range(len(model))])
        step = state["progress"]["step"]
    except (OSError, fingerprint.FingerprintError, KeyError, TypeError, RuntimeError) as err:
        raise FlatError(f"{path}: not a train.py checkpoint with Adam moments ({type(err).__name__}: {err})") from None
    return Flat(step, weights.numpy(), m.numpy(), v.numpy())


def export(checkpoint: Path, out: Path) -> Flat:
    """Write OUT (and OUT.sha256) from CHECKPOINT."""
    flat = from_checkpoint(checkpoint)
    out.parent.mkdir(parents=True, exist_ok=True)
    digest = fingerprint.write_atomic(out, encode(flat))
    fingerprint.write_sidecar(out, digest)
    return flat


def describe(path: Path) -> list[str]:
    """The header and sizes of a flat file, its length checked, and what it lacks."""
    flat = read(path)
    n = len(flat.weights)
    lines = [f"{path}: step {flat.step}, {n} parameters, {size(n)} bytes = 8 + 12 x {n} (length checked)"]
    for name, values in (("weights", flat.weights), ("m", flat.m), ("v", flat.v)):
        lines.append(f"  {name:8s} float32 x {n}: min {values.min():.6g}, max {values.max():.6g}")
    return [*lines, f"  not in it: {LOST}"]


def restore(flat: Flat, model: Any, optimizer: Any) -> None:
    """All a flat file can give back: weights and Adam moments (as float32) and Adam's step count.
    Everything else keeps its freshly built state: scheduler, generators, data position, progress."""
    import torch

    params = list(model.parameters())
    count = sum(p.numel() for p in params)
    if len(flat.weights) != count:
        raise FlatError(f"flat file holds {len(flat.weights)} parameters, the model has {count}")
    state, offset = {}, 0
    with torch.no_grad():
        for i, p in enumerate(params):
            chunk = slice(offset, offset + p.numel())
            p.copy_(torch.from_numpy(flat.weights[chunk]).view_as(p))
            state[i] = {
                "step": torch.tensor(float(flat.step)),
                "exp_avg": torch.from_numpy(flat.m[chunk]).view_as(p).to(p.dtype),
                "exp_avg_sq": torch.from_numpy(flat.v[chunk]).view_as(p).to(p.dtype),
            }
            offset += p.numel()
    optimizer.load_state_dict({"state": state, "param_groups": optimizer.state_dict()["param_groups"]})
