"""Torch-free pieces shared by the faulty trainers: the protocol's command line and its three files.

The checkpoint is a minimal torch zip archive (data.pkl, byteorder, version) that
`torch.load(..., weights_only=True)` loads, written with the standard library so that these
trainers start in milliseconds instead of paying about a second to import torch.
"""

import argparse
import hashlib
import io
import json
import pickle
import sys
import zipfile
from pathlib import Path
from typing import Any

PROTOCOL = "resume-protocol/1"
CHECKPOINT, SUMMARY = "checkpoint.pt", "summary.json"


def parse_args() -> argparse.Namespace:
    """PROTOCOL.md section 1: --steps N --output DIR [--resume CKPT] [--omit-rng-restore]."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--output", type=Path, required=True)
    parser.add_argument("--resume", type=Path)
    parser.add_argument("--omit-rng-restore", action="store_true")
    return parser.parse_args()


def make_output(output: Path) -> None:
    if output.exists():
        sys.exit(f"--output {output}: already exists")
    output.mkdir(parents=True)


def checkpoint_bytes(state: dict[str, Any]) -> bytes:
    """A torch.save-compatible archive of plain data (no tensors)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("archive/data.pkl", pickle.dumps(state, protocol=2))
        archive.writestr("archive/byteorder", "little")
        archive.writestr("archive/version", "3\n")
    return buffer.getvalue()


def write_checkpoint(output: Path, data: bytes, digest: str | None = None) -> None:
    """checkpoint.pt and its sidecar in sha256sum format; `digest` overrides the true one."""
    (output / CHECKPOINT).write_bytes(data)
    digest = digest or hashlib.sha256(data).hexdigest()
    (output / f"{CHECKPOINT}.sha256").write_text(f"{digest}  {CHECKPOINT}\n", encoding="ascii")


def summary(steps: int) -> dict[str, Any]:
    """A well-formed summary of `steps` trivial updates; `meta` may be any JSON, here not an object."""
    history = [{"step": s, "rows": [0], "lr": 0.1, "loss": 1.0} for s in range(1, steps + 1)]
    compared = {"step": steps, "history": history, "state": {}, "next": {"lr": 0.1}, "eval": {}}
    return {"protocol": PROTOCOL, **compared, "meta": ["not", "an", "object"]}


def write_summary(output: Path, text: str | dict[str, Any]) -> None:
    if isinstance(text, dict):
        text = json.dumps(text, indent=1) + "\n"
    (output / SUMMARY).write_text(text, encoding="utf-8")
