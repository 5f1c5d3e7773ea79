"""Benchmark: wall time of verify_resume.py end to end against one `train.py --steps 10` run.

    python -B -m benchmarks.verify_ratio [--repeats 5]

The verifier's critical path is two trainer processes (interrupted, then a resume), so the ratio
cannot drop below about 2; the target is at most 2.2 on a 2-core machine. Runs alternate so that
drift in machine load hits both sides alike; medians are reported. Also prints where one trainer
process spends its time, and what the trainer's two start-up shortcuts save (the same run with
RESUMEPROOF_STOCK_TORCH=1, docs/architecture.md). This prints figures; it asserts nothing.
"""

import json
import os
import statistics
import tempfile
from pathlib import Path

import click

from benchmarks.helpers import PY, timed


def breakdown(run_dir: Path) -> dict[str, float]:
    """Seconds of one trainer process by phase: interpreter, imports, set-up, updates, checkpoint."""
    bare = min(timed([*PY, "-c", "pass"]) for _ in range(3))
    imports = min(timed([*PY, "-c", "import torch, numpy, click"]) for _ in range(3)) - bare
    total = timed([*PY, "train.py", "--steps", "10", "--output", str(run_dir)])
    seconds = json.loads((run_dir / "summary.json").read_text())["meta"]["seconds"]
    return {"interpreter": bare, "import torch+numpy+click": imports, **seconds, "total": total}


@click.command()
@click.option("--repeats", type=click.IntRange(min=1), default=5, show_default=True, help="Runs of each side.")
def main(repeats: int) -> None:
    train_times, verify_times, stock_times = [], [], []
    stock_env = {**os.environ, "RESUMEPROOF_STOCK_TORCH": "1"}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(repeats):
            train_times.append(timed([*PY, "train.py", "--steps", "10", "--output", f"{tmp}/train-{i}"]))
            verify_times.append(timed([*PY, "verify_resume.py", "--output", f"{tmp}/verify-{i}"]))
            stock_times.append(timed([*PY, "train.py", "--steps", "10", "--output", f"{tmp}/stock-{i}"], stock_env))
        phases = breakdown(Path(tmp) / "breakdown")
    train, verify = statistics.median(train_times), statistics.median(verify_times)
    print(f"train.py --steps 10   median {train:.3f} s  (runs: {', '.join(f'{t:.2f}' for t in train_times)})")
    print(f"verify_resume.py      median {verify:.3f} s  (runs: {', '.join(f'{t:.2f}' for t in verify_times)})")
    print(f"ratio                 {verify / train:.2f}  (target <= 2.2)")
    stock = statistics.median(stock_times)
    print(f"train.py, stock torch  median {stock:.3f} s  (shortcuts save {stock - train:.3f} s per trainer process)")
    print("one train.py process: " + ", ".join(f"{name} {value:.3f} s" for name, value in phases.items()))


if __name__ == "__main__":
    main()
