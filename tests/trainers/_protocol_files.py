"""Torch-free pieces shared by the faulty trainers: the protocol's command line and its three files.

The checkpoint is a torch zip archive of plain data, laid out byte for byte as torch.save lays it
out (tests/fuzz/zipwriter.py), which `torch.load(..., weights_only=True)` and the verifier's
torch-free check load; written without torch so that these trainers start in milliseconds
instead of paying about a second to import torch.
"""

import argparse
import hashlib
import importlib.util
import json
import pickle
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

PROTOCOL = "resume-protocol/1"
CHECKPOINT, SUMMARY = "checkpoint.pt", "summary.json"
TESTS = Path(__file__).resolve().parent.parent
REPO = TESTS.parent
TRAIN = REPO / "train.py"


def _load(name: str, path: Path) -> ModuleType:
    """A module of the repository by its file: these trainers run as scripts from any directory, where the
    repository is not importable. Registered under its own name before it runs, as an import would."""
    if name in sys.modules:  # imported already (under pytest, where the repository is importable)
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{path}: cannot be loaded as {name}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


zipwriter = _load("tests.fuzz.zipwriter", TESTS / "fuzz" / "zipwriter.py")  # the torch-exact writer, stdlib only


def run_train_py(argv: list[str]) -> None:
    """Run the reference trainer in this process with the command line `argv`, as `python -B train.py ARGV`."""
    from resumeproof.reference.train import main

    sys.argv = [str(TRAIN), *argv]
    main()


def parser() -> argparse.ArgumentParser:
    """docs/protocol.md section 1: --steps N --output DIR [--resume CKPT] [--omit-rng-restore], nothing more."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--output", type=Path, required=True)
    parser.add_argument("--resume", type=Path)
    parser.add_argument("--omit-rng-restore", action="store_true")
    return parser


def parse_args() -> argparse.Namespace:
    return parser().parse_args()


def make_output(output: Path) -> None:
    if output.exists():
        sys.exit(f"--output {output}: already exists")
    output.mkdir(parents=True)


def checkpoint_bytes(state: dict[str, Any]) -> bytes:
    """A torch.save-compatible archive of plain data (no tensors)."""
    records = [
        ("data.pkl", pickle.dumps(state, protocol=2)),
        (".format_version", b"1"),
        (".storage_alignment", b"64"),
        ("byteorder", b"little"),
        ("version", b"3\n"),
        (".data/serialization_id", b"0" * 40),
    ]
    return zipwriter.write([zipwriter.Record(name, data) for name, data in records])


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
