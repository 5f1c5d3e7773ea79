"""The classic flat file of weights and Adam moments, and why it is not a checkpoint.

    python -B -m resumeproof.kit.flat export runs/a/checkpoint.pt runs/a/flat.bin
    python -B -m resumeproof.kit.flat inspect runs/a/flat.bin

Layout, little-endian: [int32 step][int32 n_params][n_params float32 weights][n_params float32 m]
[n_params float32 v], parameters in the model's parameter order: exactly 8 + 12 * n_params bytes
(404 for the reference model's 33). It holds no scheduler, no generators, no data position, no
history, and rounds everything to float32: `verify_resume.py --faults flat` shows that a resume
from it diverges.
"""

import io
import struct
import sys
from dataclasses import dataclass
from pathlib import Path

import click
import numpy as np

from resumeproof.common import fingerprint
from resumeproof.verify.plan import FLAT_CAUSE

HEADER = struct.Struct("<ii")
LOST = FLAT_CAUSE


class FlatError(Exception):
    """A flat file that cannot be written or read."""


@dataclass(frozen=True)
class Flat:
    step: int
    weights: np.ndarray  # float32, n_params
    m: np.ndarray
    v: np.ndarray


def size(n_params: int) -> int:
    return HEADER.size + 12 * n_params


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
    """Weights and Adam moments of a checkpoint written by train.py, in the model's parameter order."""
    import torch  # only the export needs it

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


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """Export a checkpoint's weights and Adam moments to the classic flat file, or inspect one."""


@main.command()
@click.argument("checkpoint", type=click.Path(path_type=Path))
@click.argument("out", type=click.Path(path_type=Path))
def export(checkpoint: Path, out: Path) -> None:
    """Write OUT (and OUT.sha256) from CHECKPOINT."""
    _run(lambda: _export(checkpoint, out))


def _export(checkpoint: Path, out: Path) -> None:
    flat = from_checkpoint(checkpoint)
    out.parent.mkdir(parents=True, exist_ok=True)
    digest = fingerprint.write_atomic(out, encode(flat))
    fingerprint.write_sidecar(out, digest)
    click.echo(f"{out}: step {flat.step}, {len(flat.weights)} parameters, {size(len(flat.weights))} bytes")


@main.command()
@click.argument("path", type=click.Path(path_type=Path))
def inspect(path: Path) -> None:
    """Print the header and sizes of a flat file, and check its length."""
    _run(lambda: _inspect(path))


def _inspect(path: Path) -> None:
    flat = read(path)
    n = len(flat.weights)
    click.echo(f"{path}: step {flat.step}, {n} parameters, {size(n)} bytes = 8 + 12 x {n} (length checked)")
    for name, values in (("weights", flat.weights), ("m", flat.m), ("v", flat.v)):
        click.echo(f"  {name:8s} float32 x {n}: min {values.min():.6g}, max {values.max():.6g}")
    click.echo(f"  not in it: {LOST}")


def _run(job) -> None:
    try:
        job()
    except FlatError as err:
        click.echo(f"flat: error: {err}", err=True)
        sys.exit(2)


if __name__ == "__main__":
    main()
