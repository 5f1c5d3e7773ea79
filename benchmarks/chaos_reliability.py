"""Reliability: the chaos test with many signals, and its figures.

    python -B -m benchmarks.chaos_reliability [--kills 200] [--steps 300] [--seed 0]

Runs `verify_resume.py chaos` once and prints what landed where, how many trainer starts it took,
how many steps were replayed, and whether anything was lost. This prints figures; the short chaos
run in tests/ is the test.
"""

import click

from benchmarks.helpers import print_checks, run_chaos


@click.command()
@click.option("--kills", type=click.IntRange(min=1), default=200, show_default=True)
@click.option("--steps", type=click.IntRange(min=2), default=300, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
def main(kills: int, steps: int, seed: int) -> None:
    code, elapsed, doc = run_chaos(["--kills", str(kills), "--steps", str(steps), "--seed", str(seed)])
    print(f"chaos: {kills} signals into {steps} steps, seed {seed}: exit {code} in {elapsed:.0f} s")
    print(f"signals: {doc['kills_by_signal']}; landed: {doc['kills_by_phase']}")
    print(
        f"trainer starts {doc['trainer_starts']}, steps replayed {doc['replayed_steps']}, "
        f"broken log lines {doc['broken_log_lines']}"
    )
    print_checks(doc)


if __name__ == "__main__":
    main()
