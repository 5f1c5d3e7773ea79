"""Benchmark: how the two tiers of a trainer that is not deterministic score (docs/checks.md, "A trainer that is not
deterministic"), on a trainer whose gradients are summed in a run-dependent order as GPU atomics sum them
(tests/trainers/atomics_kit.py; with `--observe`, tests/trainers/atomics_script.py).

    python -B -m benchmarks.spread [--runs 10] [--observe]

`--runs` verifications of the correct trainer, each of which must pass (a failure is a false alarm of the band:
the chance that an exact resume lands outside 10 times its measured spread), then one verification per bug
(`--bug PART`), each of which must fail with PART named. For each it prints the exit code, the verdict's tier, the
part named, and for the correct runs how close the resume came to its band (the largest ratio of its distance
from the continuous run to the band's width before the factor). This prints figures; it asserts nothing.
"""

import json
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import click

from benchmarks.helpers import PY, REPO

BUGS = ("optimizer", "scheduler", "scaler", "ema", "rng", "data")
KIT = "tests/trainers/atomics_kit.py"
SCRIPT = "tests/trainers/atomics_script.py"


def verify(output: Path, observe: bool, bug: str | None) -> tuple[int, dict, float]:
    extra = ["--bug", bug] if bug else []
    if observe:
        train = shlex.join([sys.executable, "-B", SCRIPT, *extra]) + " --iters {steps} --out {run}"
        args = ["--observe", "--steps", "6", "--interrupt-at", "3", "--train-cmd", train]
        args += ["--resume-cmd", train + " --resume {checkpoint}", "--checkpoint", "{run}/ckpt_{step}.pt"]
    else:
        args = ["--train-cmd", shlex.join([sys.executable, "-B", KIT, *extra])]
    start = time.perf_counter()
    argv = [*PY, "verify_resume.py", "--output", str(output), "--jobs", "2", *args]
    proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True)
    report = output / "verification.json"
    return proc.returncode, json.loads(report.read_text()) if report.is_file() else {}, time.perf_counter() - start


def closest(doc: dict, observe: bool) -> float | None:
    """The largest ratio, over the updates after k, of the full resume's loss distance to the band's envelope."""
    spread = (doc.get("determinism") or {}).get("spread")
    if not spread:
        return None
    envelope = dict(zip(spread["updates"], spread["envelope"].get("loss", []), strict=False))
    k = doc["interrupt_at"][0]
    out = Path(doc["trajectories"]["continuous"]["log"]).parent.parent
    losses = {}
    for name in ("continuous", "resumed"):
        if observe:
            records = json.loads((out / "observed" / f"{name}.json").read_text())["updates"]
            offset = 0 if name == "continuous" else k
            losses[name] = {int(n) + offset: u["loss"]["value"] for n, u in records.items()}
        else:
            history = json.loads((out / name / "summary.json").read_text())["history"]
            losses[name] = {i + 1: r["loss"] for i, r in enumerate(history)}
    ratios = [
        abs(losses["resumed"][n] - losses["continuous"][n]) / envelope[n]
        for n in losses["resumed"]
        if n > k and envelope.get(n)
    ]
    return max(ratios) if ratios else None


def named(doc: dict) -> str:
    said = [c["diagnosis"]["lost"] for c in doc.get("checks", []) if not c["passed"] and c.get("diagnosis")]
    return ", ".join(dict.fromkeys(said)) or "-"


@click.command()
@click.option(
    "--runs", type=click.IntRange(min=1), default=10, show_default=True, help="Verifications of the correct trainer."
)
@click.option(
    "--observe", is_flag=True, help="The unmodified script under verify --observe instead of the kit trainer."
)
def main(runs: int, observe: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        passed, ratios = 0, []
        for i in range(runs):
            code, doc, seconds = verify(Path(tmp) / f"correct-{i}", observe, None)
            passed += code == 0
            ratio = closest(doc, observe)
            ratios += [ratio] if ratio is not None else []
            shown = f"{ratio:.2f}" if ratio is not None else "-"
            print(f"correct #{i + 1}: exit {code}  closest to the band {shown} (of 10)  {seconds:.0f} s", flush=True)
        print(f"correct: {passed}/{runs} passed; the closest a resume came to its band: {max(ratios, default=0):.2f}")
        for bug in BUGS:
            code, doc, seconds = verify(Path(tmp) / f"bug-{bug}", observe, bug)
            print(f"--bug {bug:<9}: exit {code}  named {named(doc)}  {seconds:.0f} s", flush=True)


if __name__ == "__main__":
    main()
