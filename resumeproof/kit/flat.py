"""The classic flat file of weights and Adam moments, and why it is not a checkpoint.

    resumeproof flat export runs/a/checkpoint.pt runs/a/flat.bin
    resumeproof flat inspect runs/a/flat.bin

Layout, little-endian: [int32 step][int32 n_params][n_params float32 weights][n_params float32 m]
[n_params float32 v], parameters in the model's parameter order: exactly 8 + 12 * n_params bytes
(404 for the reference model's 33). It holds no scheduler, no generators, no data position, no
history, and rounds everything to float32: `verify_resume.py --faults flat` shows that a resume
from it diverges. Reading one needs no torch (resumeproof.common.flatfile, re-exported here);
exporting and restoring one do.
"""

from pathlib import Path
from typing import Any

import torch

from resumeproof.common import fingerprint
from resumeproof.common.flatfile import Flat, FlatError, decode, describe, encode, read
from resumeproof.common.protocol import MODEL, OPTIMIZER, PROGRESS
from resumeproof.kit.checkpoint import CheckpointError
from resumeproof.kit.checkpoint import load as load_checkpoint

__all__ = ["Flat", "FlatError", "decode", "describe", "encode", "export", "from_checkpoint", "read", "restore"]


def from_checkpoint(path: Path) -> Flat:
    """Weights and Adam moments of a checkpoint in the kit's standard layout, in the model's parameter order."""
    try:
        state = load_checkpoint(path, purpose="export")  # size, fingerprint, torch.load(weights_only=True)
    except CheckpointError as err:
        raise FlatError(str(err)) from None
    try:
        model, moments = state[MODEL], state[OPTIMIZER]["state"]
        weights = torch.cat([t.flatten() for t in model.values()])
        m = torch.cat([moments[i]["exp_avg"].flatten() for i in range(len(model))])
        v = torch.cat([moments[i]["exp_avg_sq"].flatten() for i in range(len(model))])
        step = state[PROGRESS]["step"]
    except (KeyError, TypeError, RuntimeError) as err:
        raise FlatError(
            f"{path}: not a checkpoint of the kit's standard layout with Adam moments ({type(err).__name__}: {err})"
        ) from None
    return Flat(step, weights.numpy(), m.numpy(), v.numpy())


def export(checkpoint: Path, out: Path) -> Flat:
    """Write OUT (and OUT.sha256) from CHECKPOINT."""
    flat = from_checkpoint(checkpoint)
    out.parent.mkdir(parents=True, exist_ok=True)
    digest = fingerprint.write_atomic(out, encode(flat))
    fingerprint.write_sidecar(out, digest)
    return flat


def restore(flat: Flat, model: Any, optimizer: Any) -> None:
    """All a flat file can give back: weights and Adam moments (as float32) and Adam's step count.
    Everything else keeps its freshly built state: scheduler, generators, data position, progress."""
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
