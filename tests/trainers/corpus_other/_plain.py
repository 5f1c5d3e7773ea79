"""The plumbing the corpus_other trainers that use no part of resumeproof share, written the way a user would.

Each trainer in this folder is a training script in a user's style with one realistic resume bug chosen by
`--bug NAME` (without it, the same script resumed correctly: the family's control); the table with each true cause
is benchmarks/diagnosis_cases.py (OTHER_CASES). This module speaks docs/protocol.md by hand: argparse with the
protocol's flags (sections 1 and 6), `torch.save` with a `sha256sum` sidecar (or a checkpoint directory's
sidecar, one line per file), a checked `torch.load(weights_only=True)`, and summary.json written with `json`.
"""

import argparse
import hashlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch


def get_args(description: str | None, parts: Sequence[str], bugs: Sequence[str] = ()) -> argparse.Namespace:
    """--steps N --output DIR [--resume CKPT] [--omit-rng-restore] [--omit=PART,...] [--bug NAME]."""
    parser = argparse.ArgumentParser(description=description, allow_abbrev=False)
    parser.add_argument("--steps", type=int, required=True, help="optimizer updates to run in this process")
    parser.add_argument("--output", type=Path, required=True, help="run directory, must not exist")
    parser.add_argument("--resume", type=Path, help="checkpoint to continue from")
    parser.add_argument("--omit-rng-restore", action="store_true", help="resume without the random generators")
    parser.add_argument("--omit", default="", help=f"resume without these parts: {','.join(parts)}")
    parser.add_argument("--bug", choices=bugs, help="resume with this bug instead of correctly")
    args = parser.parse_args()
    args.omit = sorted({p for p in args.omit.split(",") if p})
    if unknown := [p for p in args.omit if p not in parts]:
        parser.error(f"--omit: no part {', '.join(unknown)} (parts: {', '.join(parts)})")
    if (args.omit or args.omit_rng_restore) and args.resume is None:
        parser.error("--omit and --omit-rng-restore need --resume")
    if args.steps < 0:
        parser.error("--steps must be >= 0")
    if args.output.exists():
        parser.error(f"--output {args.output} already exists; refusing to touch it")
    return args


def restore(args: argparse.Namespace, part: str) -> bool:
    """Whether a resume puts `part` back: not when --omit names it, nor a generator under --omit-rng-restore."""
    if args.resume is None or part in args.omit:
        return False
    return not (args.omit_rng_restore and part.startswith("rng-"))


def save(obj: Any, path: Path) -> None:
    """torch.save, then `sha256sum`'s line beside it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(obj, path)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    path.with_name(path.name + ".sha256").write_text(f"{digest}  {path.name}\n")


def load(path: Path) -> Any:
    """The checkpoint, after its sidecar's digest matched."""
    expected = path.with_name(path.name + ".sha256").read_text().split()[0]
    if hashlib.sha256(path.read_bytes()).hexdigest() != expected:
        sys.exit(f"{path}: sha256 does not match {path.name}.sha256; refusing to resume")
    return torch.load(path, map_location="cpu", weights_only=True)


def fingerprint_dir(path: Path) -> None:
    """The sidecar of a checkpoint directory: one `sha256sum` line per file under it, sorted by path."""
    files = sorted(str(f.relative_to(path.parent)) for f in path.rglob("*") if f.is_file())
    lines = [f"{hashlib.sha256((path.parent / f).read_bytes()).hexdigest()}  {f}" for f in files]
    path.with_name(path.name + ".sha256").write_text("".join(f"{line}\n" for line in lines))


def check_dir(path: Path) -> None:
    """Every file of a checkpoint directory matches its sidecar line, and the sidecar lists every file."""
    listed = {}
    for line in path.with_name(path.name + ".sha256").read_text().splitlines():
        digest, name = line.split("  ", 1)
        listed[name] = digest
    present = {str(f.relative_to(path.parent)) for f in path.rglob("*") if f.is_file()}
    if present != set(listed):
        sys.exit(f"{path}: its files are not the ones {path.name}.sha256 lists; refusing to resume")
    for name, digest in listed.items():
        if hashlib.sha256((path.parent / name).read_bytes()).hexdigest() != digest:
            sys.exit(f"{path.parent / name}: sha256 does not match {path.name}.sha256; refusing to resume")


def plain(value: Any) -> Any:
    """Tensors as (nested) lists, dicts with string keys, tuples as lists: what json can write."""
    if isinstance(value, torch.Tensor):
        return value.tolist()
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def write_summary(
    args: argparse.Namespace, parts: Sequence[str], *, step: int, history: list, state: Any, next: Any, eval: Any
) -> None:
    """OUTPUT/summary.json; meta echoes --omit and declares the parts."""
    args.output.mkdir(parents=True, exist_ok=True)
    doc = {
        "protocol": "resume-protocol/1",
        "step": step,
        "history": history,
        "state": plain(state),
        "next": plain(next),
        "eval": plain(eval),
        "meta": {"omitted": args.omit, "parts": list(parts), "bug": args.bug, "torch": torch.__version__},
    }
    (args.output / "summary.json").write_text(json.dumps(doc))


def peek(generator: torch.Generator | None = None, n: int = 3) -> list[float]:
    """The next `n` uniform draws of a generator (torch's global one by default), without consuming them."""
    if generator is None:
        saved = torch.get_rng_state()
        draws = torch.rand(n, dtype=torch.float64).tolist()
        torch.set_rng_state(saved)
    else:
        saved = generator.get_state()
        draws = torch.rand(n, generator=generator, dtype=torch.float64).tolist()
        generator.set_state(saved)
    return draws
