"""Benchmark: what the observer costs a verification of the reference trainer, and one trainer process; with
`--large`, what it costs per recorded update of a model of about 100M parameters on CPU.

    python -B -m benchmarks.observer_cost [--repeats 7]
    python -B -m benchmarks.observer_cost --large [--updates 4]

The verifier injects the observer into every trajectory (docs/protocol.md, section 7); `--no-observe` leaves it
out. Runs alternate so that drift in machine load hits both sides alike; medians are reported, and the cost as a
share of the verification without it (the target is at most 10%). Also one `train.py --steps 10` process with and
without the observer's environment. This prints figures; it asserts nothing.
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


# Six 4096x4096 layers (100.7M float32 parameters), AdamW, a batch of 8: each update's wall seconds, printed as JSON.
LARGE = """
import json, sys, time
import torch
torch.manual_seed(0)
model = torch.nn.Sequential(*[torch.nn.Linear(4096, 4096) for _ in range(6)])
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
x = torch.randn(8, 4096)
seconds = []
for _ in range(int(sys.argv[1])):
    start = time.perf_counter()
    loss = model(x).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    seconds.append(time.perf_counter() - start)
print(json.dumps({"params": sum(p.numel() for p in model.parameters()), "seconds": seconds}))
"""


def _large(updates: int) -> None:
    """Per-update seconds without the observer, with it recording nothing, and with it recording every update."""
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "large.py"
        script.write_text(LARGE)
        record = Path(tmp) / "records"
        sides = {
            "no observer": None,
            "observer, recording nothing": observation.environment(dict(os.environ), record, set()),
            "observer, recording every update": observation.environment(dict(os.environ), record, f"1-{updates}"),
        }
        medians = {}
        for label, env in sides.items():
            argv = [sys.executable, "-B", str(script), str(updates)]
            out = json.loads(subprocess.run(argv, env=env, capture_output=True, text=True, check=True).stdout)
            medians[label] = statistics.median(out["seconds"][1:] or out["seconds"])  # the first warms up
            print(f"{label:<34} median {medians[label]:.3f} s per update ({out['params'] / 1e6:.1f}M parameters)")
    cost = medians["observer, recording every update"] - medians["no observer"]
    print(f"the observer's cost per recorded update  {cost:+.3f} s")


@click.command()
@click.option("--repeats", type=click.IntRange(min=1), default=7, show_default=True, help="Runs of each side.")
@click.option("--large", is_flag=True, help="Instead: the cost per recorded update of a ~100M-parameter model.")
@click.option("--updates", type=click.IntRange(min=2), default=4, show_default=True, help="With --large: updates.")
def main(repeats: int, large: bool, updates: int) -> None:
    if large:
        _large(updates)
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
