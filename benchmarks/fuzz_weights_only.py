"""Benchmark: the torch-free weights_only check against torch.load(weights_only=True), by differential fuzzing.

    python -B -m benchmarks.fuzz_weights_only [--cases 100000] [--seed 20261129] [--jobs 2]

Seeded cases (tests/fuzz: generated checkpoints of allowed content, mutated pickles and containers,
argument-fuzzed rebuild calls, code-running payloads that only touch a marker file) are judged by
both sides in worker processes under a 3 GiB address-space limit and a per-case timeout. Prints
the confusion table per kind of case, the time per file of each side, and the cases that break the
promise (accepted by the check and refused by torch, failures of the check, markers); exit 1 if any.
"""

import sys
import time

import click

from tests.fuzz import run

BROKEN = ("ours accepts, torch refuses", "our failure", "marker created")


@click.command()
@click.option("--cases", default=100_000, show_default=True, help="Number of cases, numbered from 0.")
@click.option(
    "--seed", default=20261129, show_default=True, help="Seed: case i of a seed is the same file on every run."
)
@click.option("--jobs", default=2, show_default=True, help="Worker processes.")
@click.option("--first", default=0, show_default=True, help="Number of the first case.")
def main(cases: int, seed: int, jobs: int, first: int) -> None:
    start = time.monotonic()
    outcomes = run.run(seed, cases, jobs, first=first)
    elapsed = time.monotonic() - start
    print(f"seed {seed}, cases {first}..{first + cases - 1}, {jobs} workers, {elapsed:.0f} s")
    print(run.table_text(outcomes))
    print(run.times_text(outcomes))
    broken = [o for o in outcomes if run.cell(o) in BROKEN or (o.kind == "valid" and o.ours != o.torch)]
    for outcome in broken[:50]:
        print("BROKEN", outcome)
    sys.exit(1 if broken else 0)


if __name__ == "__main__":
    main()
