"""Reliability: the chaos test with many signals, and its figures.

    python -B benchmarks/chaos_reliability.py [--kills 200] [--steps 300] [--seed 0]

Runs `verify_resume.py chaos` once and prints what landed where, how many trainer starts it took,
how many steps were replayed, and whether anything was lost. This prints figures; the short chaos
run in tests/ is the test.
"""

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import click

REPO = Path(__file__).resolve().parent.parent


def run_chaos(extra_args: list[str]) -> tuple[int, float, dict[str, Any]]:
    """One `verify_resume.py chaos` with these arguments: its exit status, its wall seconds, its verification.json."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "chaos"
        argv = [sys.executable, "-B", "verify_resume.py", "chaos", "--output", str(out), *extra_args]
        start = time.perf_counter()
        proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True)
        elapsed = time.perf_counter() - start
        report = out / "verification.json"
        if not report.is_file():
            sys.exit(f"exit {proc.returncode}, no report:\n{proc.stderr[-3000:]}")
        return proc.returncode, elapsed, json.loads(report.read_text())


def print_checks(doc: dict[str, Any]) -> None:
    """A chaos run's checks (verification.json's list, as a verification's), one line each."""
    for check in doc["checks"]:
        print(f"  {'PASS' if check['passed'] else 'FAIL'}  {check['name']}")


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
