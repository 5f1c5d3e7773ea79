"""Benchmark: what distribution costs. A DCP save at 2 processes against torch.save in one, and a verification.

    python -B -m benchmarks.distributed [--repeats 3] [--hidden 2500000] [--verifications 3]

1. Checkpoint writes of the 10M-parameter model (train.py --hidden 2500000: 10,000,001 parameters,
   240 MB with Adam's moments), after one update. At W=2 under torchrun: `dcp_io.save` of the state
   (get_state_dict, each rank writing its share) and the kit's whole write path (the cross-rank
   check, dcp_io.save, the read-back check of every item, the sidecar, the rename). In one process:
   `torch.save` + fsync of the same state, and kit.save_checkpoint. Each write starts after `sync`;
   medians and minimums of `--repeats`.
2. A default verification (4 trajectories, 10 updates) of train.py under torchrun at W=2 against
   W=1, and against the single process without torchrun; runs alternate, medians.

The machine is shared: figures vary run to run. This prints figures; it asserts nothing.
"""

import functools
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import click

from benchmarks.helpers import PY, REPO, TORCHRUN, timed


def _worker(hidden: int, out: Path, repeats: int) -> None:
    """One rank (or the single process): build train.py's model, take one update, time the writes."""
    import dataclasses

    import torch
    import torch.distributed as dist

    from resumeproof.kit import layout
    from resumeproof.kit.distributed import dcp_io, state
    from resumeproof.reference import train

    options = train.kit.distributed.Options()
    with train.kit.distributed.session("benchmark", False, options) as world:
        train.kit.configure_torch()
        exp = train.Experiment(hidden=hidden)
        par = train.kit.distributed.parallel(world, options, exp.batch)
        t = train.build(exp, par.prepare)
        x, y = train.load_data(exp)
        t.history.append(train.train_step(exp, t, x, y, par))
        config, identity = dataclasses.asdict(exp), train.kit.identity(train.CODE, [train.DATA_FILE])
        times: dict[str, list[float]] = {"raw": [], "kit": []}
        group = dist if world is not None else None
        for i in range(repeats):
            everything = layout.capture(t, config, identity, [], by=par)
            if world is None:
                raw = functools.partial(_torch_save, everything, out / f"raw-{i}")
            else:
                local, tensors, extra = state.split(everything, {"world_size": world.size})
                mine = {**local, state.RNG: tensors, state.EXTRA: dcp_io.json_tensor(extra)} if world.main else local
                raw = functools.partial(dcp_io.save, mine, out / f"raw-{i}")
            kit = functools.partial(par.save, out / f"kit-{i}.pt", everything)
            times["raw"].append(_timed(raw, group))
            times["kit"].append(_timed(kit, group))
        if world is None or world.main:
            params = sum(p.numel() for p in t.model.parameters())
            print(json.dumps({"params": params, "bytes": _bytes(out / "raw-0"), **times, "torch": torch.__version__}))


def _bytes(path: Path) -> int:
    """A file's size, or a DCP directory's."""
    return sum(f.stat().st_size for f in path.rglob("*")) if path.is_dir() else path.stat().st_size


def _timed(write, dist) -> float:
    os.sync()
    if dist is not None:
        dist.barrier()
    start = time.perf_counter()
    write()
    if dist is not None:
        dist.barrier()
    return time.perf_counter() - start


def _torch_save(value, path: Path) -> None:
    import torch

    with open(path, "wb") as f:
        torch.save(value, f)
        f.flush()
        os.fsync(f.fileno())


def saves(hidden: int, repeats: int) -> None:
    results = {}
    for world in (0, 2):
        with tempfile.TemporaryDirectory(dir=REPO / "runs") as tmp:
            head = [*TORCHRUN, "--nproc-per-node", str(world)] if world else PY
            argv = [*head, "-m", "benchmarks.distributed", "--worker", "--hidden", str(hidden), "--out", tmp]
            argv += ["--repeats", str(repeats)]
            proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True)
            if proc.returncode != 0:
                sys.exit(f"{shlex.join(argv)} exited {proc.returncode}:\n{proc.stderr[-3000:]}")
            results[world] = json.loads(proc.stdout.strip().splitlines()[-1])
    one, two = results[0], results[2]
    print(f"{one['params']:,} parameters; one file {one['bytes'] / 1e6:.0f} MB; DCP files {two['bytes'] / 1e6:.0f} MB")
    for key, label in (
        ("raw", "DCP save W=2 / torch.save+fsync"),
        ("kit", "kit DCP save W=2 / kit.save_checkpoint"),
    ):
        for pick in (statistics.median, min):
            a, b = pick(two[key]), pick(one[key])
            print(f"  {label:42s} {pick.__name__:6s} {a:6.2f} s / {b:6.2f} s = {a / b:.2f}")


def verification_ratio(count: int) -> None:
    commands = {
        "W=2 torchrun": shlex.join([*TORCHRUN, "--nproc-per-node", "2", "train.py"]),
        "W=1 torchrun": shlex.join([*TORCHRUN, "--nproc-per-node", "1", "train.py"]),
        "single process": shlex.join([sys.executable, "-B", "train.py"]),
    }
    seconds: dict[str, list[float]] = {name: [] for name in commands}
    with tempfile.TemporaryDirectory(dir=REPO / "runs") as tmp:
        for i in range(count):
            for name, train_cmd in commands.items():
                out = Path(tmp) / f"{name.replace(' ', '-').replace('=', '')}-{i}"
                argv = [sys.executable, "-B", "verify_resume.py", "--output", str(out), "--train-cmd", train_cmd]
                seconds[name].append(timed(argv))
    medians = {name: statistics.median(times) for name, times in seconds.items()}
    for name, times in seconds.items():
        shown = ", ".join(f"{t:.1f}" for t in times)
        print(f"  default verification, {name:15s} median {medians[name]:5.1f} s  ({shown})")
    w2 = medians["W=2 torchrun"]
    print(
        f"  ratio W=2 / W=1 (both torchrun) {w2 / medians['W=1 torchrun']:.2f}; W=2 / single process "
        f"{w2 / medians['single process']:.2f}"
    )


@click.command()
@click.option("--repeats", type=click.IntRange(min=1), default=3, show_default=True, help="Writes of each kind.")
@click.option("--hidden", type=click.IntRange(min=1), default=2_500_000, show_default=True, help="4H+1 parameters.")
@click.option("--verifications", type=click.IntRange(min=0), default=3, show_default=True, help="Of each kind.")
@click.option("--worker", is_flag=True, hidden=True)
@click.option("--out", type=click.Path(path_type=Path), hidden=True)
def main(repeats: int, hidden: int, verifications: int, worker: bool, out: Path | None) -> None:
    if worker:
        assert out is not None
        _worker(hidden, out, repeats)
        return
    (REPO / "runs").mkdir(exist_ok=True)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    saves(hidden, repeats)
    if verifications:
        verification_ratio(verifications)


if __name__ == "__main__":
    main()
