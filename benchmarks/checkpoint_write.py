"""Benchmark: the checkpoint write path against simply writing the same bytes to the same disk.

    python -B -m benchmarks.checkpoint_write [--repeats 3]

For the reference model (33 parameters) and a wide one (--hidden 2500000: 10,000,001 parameters,
a 240 MB checkpoint with Adam's moments): capture + kit.save_checkpoint (serialise, write, fsync,
read back and check, sha256, sidecar, directory fsyncs) against
open + write + fsync of the same bytes, each started after `sync` so that neither inherits the
other's dirty pages, and every file removed after each repeat. This machine's page cache makes
single timings of 240 MB writes vary by a factor of two, so minimums and medians are printed.
The target is at most 2 times. Then the read-back step alone on a warm page cache: the torch-free
`check`, and `torch.load(weights_only=True)` with and without mmap (the write path uses mmap).
Prints figures only.
"""

import dataclasses
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import click
import torch

from resumeproof.common import weights_only
from resumeproof.kit import checkpoint, layout
from resumeproof.reference import train

READ_BACK = {
    "check": weights_only.check,
    "torch.load mmap": lambda path: torch.load(path, map_location="cpu", weights_only=True, mmap=True),
    "torch.load": lambda path: torch.load(path, map_location="cpu", weights_only=True),
}


def raw_write(path: Path, data: bytes) -> float:
    os.sync()  # both sides start with no dirty pages queued ahead of them
    start = time.perf_counter()
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    return time.perf_counter() - start


def read_back(path: Path) -> dict[str, float]:
    """Seconds of each read-back step on this file, already in the page cache."""
    return {name: _timed(step, path) for name, step in READ_BACK.items()}


def _timed(step: Callable[[Path], object], path: Path) -> float:
    start = time.perf_counter()
    step(path)
    return time.perf_counter() - start


def measure(hidden: int, directory: Path) -> tuple[int, int, float, float, dict[str, float]]:
    exp = train.Experiment(hidden=hidden)
    par = train.kit.distributed.parallel(None, train.kit.distributed.Options(), exp.batch)  # one process
    t = train.build(exp, par.prepare)
    x, y = train.load_data(exp)
    t.history.append(train.train_step(exp, t, x, y, par))
    identity = train.kit.identity(train.CODE, [train.DATA_FILE])
    path = directory / f"checkpoint-{hidden}.pt"
    raw = raw_write(directory / f"raw-{hidden}-before.bin", bytes(_size_hint(hidden)))  # same disk, same size
    os.sync()
    start = time.perf_counter()
    checkpoint.save(path, layout.capture(t, dataclasses.asdict(exp), identity, [], by=par))
    written = time.perf_counter() - start
    raw = statistics.median([raw, raw_write(directory / f"raw-{hidden}-after.bin", path.read_bytes())])
    n_params, size = sum(p.numel() for p in t.model.parameters()), path.stat().st_size
    steps = read_back(path)
    for leftover in directory.iterdir():  # each repeat starts with the same free page cache
        leftover.unlink()
    return n_params, size, written, raw, steps


def _size_hint(hidden: int) -> int:
    """Bytes of the checkpoint: weights and two Adam moments in float64, and about 20 kB of the rest."""
    return 3 * 8 * (4 * hidden + 1) + 20_000


@click.command()
@click.option("--repeats", type=click.IntRange(min=1), default=3, show_default=True)
def main(repeats: int) -> None:
    train.kit.configure_torch()
    with tempfile.TemporaryDirectory(dir=Path(__file__).resolve().parent.parent / "runs") as tmp:
        for hidden in (8, 2_500_000):
            runs = [measure(hidden, Path(tmp)) for _ in range(repeats)]
            n_params, size = runs[0][0], runs[0][1]
            written, raw = [r[2] for r in runs], [r[3] for r in runs]
            for label, pick in (("min", min), ("median", statistics.median)):
                print(
                    f"{n_params:>10,} parameters, {size / 1e6:6.2f} MB, {label:6s}: checkpoint write "
                    f"{pick(written) * 1e3:7.1f} ms, raw write+fsync {pick(raw) * 1e3:7.1f} ms, "
                    f"ratio {pick(written) / pick(raw):.2f}"
                )
            for name in READ_BACK:
                ms = [r[4][name] * 1e3 for r in runs]
                print(f"{'':>12}read-back {name:16s} min {min(ms):7.2f} ms, median {statistics.median(ms):7.2f} ms")


if __name__ == "__main__":
    main()
