"""Benchmark: what the observer costs a verification of the reference trainer, and one trainer process; with
`--large`, what it costs per recorded update of large models, on the CPU or a CUDA GPU.

    python -B -m benchmarks.observer_cost [--repeats 7]
    python -B -m benchmarks.observer_cost --large [--device cpu] [--layers 2,6] [--width 4096] [--repeats 3]
    python -B -m benchmarks.observer_cost --large --device cuda      # --layers 4,16 --width 8192: 268M and 1.07B

The verifier injects the observer into every trajectory (docs/protocol.md, section 7); `--no-observe` leaves it
out. Runs alternate so that drift in machine load hits both sides alike; medians are reported, and the cost as a
share of the verification without it (the target is at most 10%). Also one `train.py --steps 10` process with and
without the observer's environment.

`--large` trains `--layers` x Linear(width, width) with AdamW on a batch of 8 (on CUDA under bf16 autocast; on the
CPU in one thread), each size as three processes: no observer, the observer recording nothing, the observer
recording every update; it reports each side's median seconds per update (the first update, which builds the
optimizer's state, left out), wall and the process's CPU time (less sensitive to other load on a shared machine),
and the ratio of a recorded update to an unrecorded one (the targets: at most 1.3 on the CPU at 100M parameters, at
most 3 on an H200 at 1B). This prints figures; it asserts nothing.
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import click

from benchmarks.helpers import PY, timed
from resumeproof.common import observation


def _line(label: str, times: list[float]) -> str:
    return f"{label:<34} median {statistics.median(times):.3f} s  (runs: {', '.join(f'{t:.2f}' for t in times)})"


# LAYERS x Linear(WIDTH, WIDTH), AdamW, a batch of 8, on DEVICE: each update's wall seconds, printed as JSON. On CUDA
# the parameters stay float32 under bf16 autocast, as mixed-precision training keeps them, and each update ends with a
# synchronization so that its seconds are the GPU's; on the CPU one thread, as the figure was measured.
LARGE = """
import json, sys, time
import torch
layers, width, device, updates = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
if device == "cpu":
    torch.set_num_threads(1)
torch.manual_seed(0)
model = torch.nn.Sequential(*[torch.nn.Linear(width, width) for _ in range(layers)]).to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
x = torch.randn(8, width, device=device)
seconds, cpu = [], []
for _ in range(updates):
    start, cpu_start = time.perf_counter(), time.process_time()
    with torch.autocast(device, dtype=torch.bfloat16, enabled=device == "cuda"):
        loss = model(x).float().pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    if device == "cuda":
        torch.cuda.synchronize()
    seconds.append(time.perf_counter() - start)
    cpu.append(time.process_time() - cpu_start)
print(json.dumps({"params": sum(p.numel() for p in model.parameters()), "seconds": seconds, "cpu": cpu}))
"""
SIDES = ("no observer", "observer, recording nothing", "observer, recording every update")


def _large(device: str, layers: list[int], width: int, updates: int, repeats: int) -> None:
    """Per-update seconds without the observer, with it recording nothing, and with it recording every update: the
    three sides alternate `repeats` times per size, so that another load on the machine hits them alike."""
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "large.py"
        script.write_text(LARGE)
        record = Path(tmp) / "records"
        envs = [
            None,
            observation.environment(dict(os.environ), record, set()),
            observation.environment(dict(os.environ), record, f"1-{updates}"),
        ]
        for count in layers:
            seconds: dict[str, list[float]] = {label: [] for label in SIDES}
            cpu: dict[str, list[float]] = {label: [] for label in SIDES}
            for _ in range(repeats):
                for label, env in zip(SIDES, envs, strict=True):
                    argv = [sys.executable, "-B", str(script), str(count), str(width), device, str(updates)]
                    proc = subprocess.run(argv, env=env, capture_output=True, text=True)
                    if proc.returncode != 0:
                        sys.exit(f"{label}: exit {proc.returncode}\n{proc.stderr[-3000:]}")
                    out = json.loads(proc.stdout)
                    seconds[label] += out["seconds"][1:]  # the first update builds the optimizer's state
                    cpu[label] += out["cpu"][1:]
            size = f"{count} x Linear({width}, {width}), {out['params'] / 1e6:.1f}M parameters, {device}"
            medians = {label: statistics.median(times) for label, times in seconds.items()}
            cpu_medians = {label: statistics.median(times) for label, times in cpu.items()}
            for label, times in seconds.items():
                spread = f"{min(times):.3f}-{max(times):.3f}"
                print(
                    f"{size}: {label:<34} median {medians[label]:.4f} s per update ({spread}, {len(times)} updates),"
                    f" CPU time {cpu_medians[label]:.4f} s"
                )
            ratio = medians[SIDES[2]] / medians[SIDES[0]]
            cpu_ratio = cpu_medians[SIDES[2]] / cpu_medians[SIDES[0]]
            print(f"{size}: a recorded update costs {ratio:.2f}x an unrecorded one ({cpu_ratio:.2f}x in CPU time)")


@click.command()
@click.option("--repeats", type=click.IntRange(min=1), default=7, show_default=True, help="Runs of each side.")
@click.option("--large", is_flag=True, help="Instead: the cost per recorded update of large models.")
@click.option("--device", type=click.Choice(["cpu", "cuda"]), default="cpu", show_default=True, help="With --large.")
@click.option("--layers", default=None, help="With --large: comma-separated layer counts [cpu: 2,6; cuda: 4,16].")
@click.option("--width", type=click.IntRange(min=1), default=None, help="With --large: [cpu: 4096; cuda: 8192].")
@click.option("--updates", type=click.IntRange(min=2), default=4, show_default=True, help="With --large: updates.")
def main(repeats: int, large: bool, device: str, layers: str | None, width: int | None, updates: int) -> None:
    if large:
        counts = layers or ("2,6" if device == "cpu" else "4,16")
        try:
            sizes = [int(n) for n in counts.split(",")]
        except ValueError:
            raise click.BadParameter(f"{counts!r}: give layer counts such as 2,6", param_hint="--layers") from None
        _large(device, sizes, width or (4096 if device == "cpu" else 8192), updates, repeats)
        return
    plain, watched, train_plain, train_watched = [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        env = observation.environment(dict(os.environ), Path(tmp) / "records", {1, 5, 6, 10})
        for i in range(repeats):
            watched.append(timed([*PY, "verify_resume.py", "--output", f"{tmp}/watched-{i}"]))
            plain.append(timed([*PY, "verify_resume.py", "--output", f"{tmp}/plain-{i}", "--no-observe"]))
            train_watched.append(timed([*PY, "train.py", "--steps", "10", "--output", f"{tmp}/tw-{i}"], env))
            train_plain.append(timed([*PY, "train.py", "--steps", "10", "--output", f"{tmp}/tp-{i}"]))
    print(_line("verify_resume.py (observed)", watched))
    print(_line("verify_resume.py --no-observe", plain))
    cost = statistics.median(watched) / statistics.median(plain) - 1
    print(f"the observer's cost                 {100 * cost:+.1f}% of a verification (target <= 10%)")
    print(_line("train.py --steps 10 (observed)", train_watched))
    print(_line("train.py --steps 10", train_plain))
    per_process = statistics.median(train_watched) - statistics.median(train_plain)
    print(f"per trainer process                 {per_process:+.3f} s")


if __name__ == "__main__":
    main()
