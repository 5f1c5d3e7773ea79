"""Benchmark: the full sweep with two processes at once against one at a time.

    python -B -m benchmarks.jobs_ratio [--repeats 1]

Runs `verify_resume.py --interrupt-at all --faults all` (28 trainer processes for 10 steps) with
`--jobs 2` and with `--jobs 1`, alternating, and prints the medians and their ratio; the target
on a 2-core machine is at most 0.6. This prints figures; it asserts nothing.
"""

import statistics
import tempfile

import click

from benchmarks.helpers import PY, timed

SWEEP = ["--interrupt-at", "all", "--faults", "all"]


def sweep(output: str, jobs: int) -> float:
    return timed([*PY, "verify_resume.py", "--output", output, *SWEEP, "--jobs", str(jobs)])


@click.command()
@click.option("--repeats", type=click.IntRange(min=1), default=1, show_default=True, help="Runs of each side.")
def main(repeats: int) -> None:
    two, one = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(repeats):
            two.append(sweep(f"{tmp}/jobs2-{i}", 2))
            one.append(sweep(f"{tmp}/jobs1-{i}", 1))
    t2, t1 = statistics.median(two), statistics.median(one)
    print(f"--interrupt-at all --faults all --jobs 2   median {t2:.2f} s  (runs: {', '.join(f'{t:.2f}' for t in two)})")
    print(f"--interrupt-at all --faults all --jobs 1   median {t1:.2f} s  (runs: {', '.join(f'{t:.2f}' for t in one)})")
    print(f"ratio                                      {t2 / t1:.2f}  (target <= 0.6)")


if __name__ == "__main__":
    main()
