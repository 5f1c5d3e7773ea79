"""Benchmark: what the observer costs a verification of the reference trainer, and one trainer process.

    python -B -m benchmarks.observer_cost [--repeats 7]

The verifier injects the observer into every trajectory (docs/protocol.md, section 7); `--no-observe` leaves it
out. Runs alternate so that drift in machine load hits both sides alike; medians are reported, and the cost as a
share of the verification without it (the target is at most 10%). Also one `train.py --steps 10` process with and
without the observer's environment. This prints figures; it asserts nothing.
"""

import os
import statistics
import tempfile
from pathlib import Path

import click

from benchmarks.helpers import PY, timed
from resumeproof.common import observation


def _line(label: str, times: list[float]) -> str:
    return f"{label:<34} median {statistics.median(times):.3f} s  (runs: {', '.join(f'{t:.2f}' for t in times)})"


@click.command()
@click.option("--repeats", type=click.IntRange(min=1), default=7, show_default=True, help="Runs of each side.")
def main(repeats: int) -> None:
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
