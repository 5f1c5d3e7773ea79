"""Benchmark: what `resumeproof watch` costs a long run (docs/performance.md, docs/long-runs.md).

    python -B -m benchmarks.watch_cost [--layers 10 --width 3162] [--every 100] [--repeats 3]

`--layers` x Linear(width, width) with AdamW on a batch of 8, on the CPU (one thread, as the observer's cost figures
were measured), about 100M parameters by default. Each process trains a few updates, then times `--updates` updates
and `--saves` checkpoints (torch.save of the model's and the optimizer's state to a file), and one process restarts
from the last checkpoint and times its first update. Two sides alternate `--repeats` times, so that another load on
the machine hits both alike: unwatched, and under `resumeproof watch` (every update watched by the observer's hooks,
recording nothing; each save fingerprinted and recorded; the restart judged). The share of the run's time at a
checkpoint every `--every` updates, in wall time and in the process's CPU time (less sensitive to other load on a
shared machine), is

    (every x (watched update - update) + (watched save - save)) / (every x update + save)

with the medians (the target: at most 1 %). The restart's one-time check is printed apart. This prints figures; it
asserts nothing.
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import click

from resumeproof.cli.watch import environment
from resumeproof.common import watching

RUN = """
import json, os, sys, time
import torch
layers, width, updates, saves, out = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
torch.set_num_threads(1)
torch.manual_seed(0)
model = torch.nn.Sequential(*[torch.nn.Linear(width, width) for _ in range(layers)])
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
path = os.path.join(out, "ckpt.pt")
restarted = os.path.exists(path)
if restarted:
    state = torch.load(path, weights_only=True)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
x = torch.randn(8, width)

def update():
    start, cpu = time.perf_counter(), time.process_time()
    loss = model(x).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return time.perf_counter() - start, time.process_time() - cpu

if restarted:
    print(json.dumps({"first": update()[0]}))
    sys.exit(0)
update()  # builds the optimizer's state
timed = [update() for _ in range(updates)]
saved, saved_cpu = [], []
for _ in range(saves):
    start, cpu = time.perf_counter(), time.process_time()
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, path)
    saved.append(time.perf_counter() - start)
    saved_cpu.append(time.process_time() - cpu)
    update()  # the next save is of another state: nothing is reused
params = sum(p.numel() for p in model.parameters())
print(json.dumps({
    "params": params, "bytes": os.path.getsize(path), "update": [t for t, _ in timed],
    "update_cpu": [c for _, c in timed], "save": saved, "save_cpu": saved_cpu,
}))
"""
SIDES = ("unwatched", "watched")


def _side(script: Path, out: Path, env: dict[str, str] | None, argv: list[str]) -> tuple[dict, float]:
    """One process that trains and saves, then one that restarts from its checkpoint."""
    out.mkdir(parents=True)
    ran = [subprocess.run([*argv, str(out)], env=env, capture_output=True, text=True) for _ in range(2)]
    for proc in ran:
        if proc.returncode != 0:
            sys.exit(f"exit {proc.returncode}\n{proc.stderr[-3000:]}")
    return json.loads(ran[0].stdout), json.loads(ran[1].stdout)["first"]


@click.command()
@click.option("--layers", type=click.IntRange(min=1), default=10, show_default=True)
@click.option("--width", type=click.IntRange(min=1), default=3162, show_default=True, help="10 x 3162^2: 100M.")
@click.option("--updates", type=click.IntRange(min=1), default=10, show_default=True, help="Updates timed each run.")
@click.option("--saves", type=click.IntRange(min=1), default=3, show_default=True, help="Saves timed each run.")
@click.option("--every", type=click.IntRange(min=1), default=100, show_default=True, help="Updates per checkpoint.")
@click.option("--repeats", type=click.IntRange(min=1), default=3, show_default=True, help="Runs of each side.")
def main(layers: int, width: int, updates: int, saves: int, every: int, repeats: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "run.py"
        script.write_text(RUN)
        argv = [sys.executable, "-B", str(script), str(layers), str(width), str(updates), str(saves)]
        kinds = ("update", "update_cpu", "save", "save_cpu", "first")
        times: dict[str, dict[str, list[float]]] = {side: {kind: [] for kind in kinds} for side in SIDES}
        for n in range(repeats):
            for side in SIDES:
                out = Path(tmp) / f"{side}-{n}"
                env = environment(dict(os.environ), out / "watch", watching.WARN) if side == "watched" else None
                found, first = _side(script, out, env, argv)
                for kind in kinds[:-1]:
                    times[side][kind] += found[kind]
                times[side]["first"].append(first)
                if side == "watched":
                    said = watching.read_restarts(out / "watch")[0]
                    assert [r.status for r in said] == [watching.EXACT], said  # the figure is of a working watch
    median = {side: {k: statistics.median(v) for k, v in kinds.items()} for side, kinds in times.items()}
    print(f"{layers} x Linear({width}, {width}), {found['params'] / 1e6:.1f}M parameters, CPU, one thread")
    print(f"  a checkpoint of {found['bytes'] / 1e9:.2f} GB (the model's and AdamW's state)")
    for side in SIDES:
        m = median[side]
        restart = f"a restart's first update {m['first']:.3f} s"
        print(
            f"  {side:<10} update {m['update']:.3f} s ({m['update_cpu']:.3f} CPU)   save {m['save']:.3f} s   {restart}"
        )
    plain, watched = median["unwatched"], median["watched"]
    for clock, suffix in (("wall", ""), ("CPU", "_cpu")):
        per_save = watched["save" + suffix] - plain["save" + suffix]
        per_update = watched["update" + suffix] - plain["update" + suffix]
        share = (every * per_update + per_save) / (every * plain["update" + suffix] + plain["save" + suffix])
        print(f"  {clock:<4} per save {per_save:+.3f} s, per update {per_update:+.4f} s: at a checkpoint every {every}")
        print(f"       updates, {100 * share:+.2f} % of the run's {clock} time (target <= 1 %)")
    print(f"  a restart's check, once: {watched['first'] - plain['first']:+.3f} s")


if __name__ == "__main__":
    main()
