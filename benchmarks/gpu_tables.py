"""The GPU benchmark's figures (benchmarks/gpu.py): the Markdown blocks it prints and writes into docs/gpu.md."""

import statistics
from collections.abc import Sequence
from datetime import date
from typing import Any

from benchmarks.gpu_matrix import PRECISIONS, RATIO_STEPS, VARIANT
from benchmarks.gpu_outcomes import Outcome, Ratio
from benchmarks.helpers import REPO, write_between

DOC = REPO / "docs" / "gpu.md"
BLOCKS = ("environment", "precisions", "faults", "nondeterministic", "ratio")  # the markers in docs/gpu.md


def markdown(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _deviation(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"


def precisions_table(outcomes: Sequence[Outcome]) -> str:
    rows = [_precision_row(o) for o in outcomes if o.case.table == "precisions"]
    header = ("--precision", "computes", "atol", "verdict", "exit", "full resume: max deviation", "wall s")
    return markdown(header, rows)


def _precision_row(o: Outcome) -> list[Any]:
    atol = "1e-12 (default)" if o.case.atol is None else "0"
    verdict = f"**{o.verdict}**" + (f": {o.detail}" if o.detail else "")
    precision = o.case.precision
    return [
        precision,
        PRECISIONS[precision],
        atol,
        verdict,
        o.exit_code,
        _deviation(o.max_deviation),
        f"{o.seconds:.1f}",
    ]


def faults_table(outcomes: Sequence[Outcome]) -> str:
    header = ("omitted part", "caught", "caught by", "diagnosis")
    found = next((o for o in outcomes if o.case.table == "faults"), None)
    if found is None:
        return markdown(header, [])
    rows = [
        [part, "yes" if f.detected else "**no**", ", ".join(f.caught_by) or "-", f.diagnosis]
        for part, f in found.faults.items()
    ]
    head = f"`--precision {found.case.precision} --faults all`: **{found.verdict}** (exit {found.exit_code}, "
    head += f"{found.seconds:.1f} s){': ' + found.detail if found.detail else ''}\n\n"
    return head + markdown(header, rows)


def nondeterministic_table(outcomes: Sequence[Outcome]) -> str:
    rows = [_variant_row(o) for o in outcomes if o.case.table == "nondeterministic"]
    return markdown(("trainer", "expected", "verdict", "detail", "exit", "wall s"), rows)


def _variant_row(o: Outcome) -> list[Any]:
    trainer = f"`{VARIANT}` ({o.case.precision}, deterministic algorithms off, `index_add_`)"
    return [trainer, o.case.expect, f"**{o.verdict}**", o.detail or "-", o.exit_code, f"{o.seconds:.1f}"]


def ratio_table(ratio: Ratio | None, device: str) -> str:
    header = ("what", "median s", "runs")
    if ratio is None:
        return markdown(header, [])
    train = f"`python -B -m resumeproof.reference --device {device} --steps {RATIO_STEPS}` (one process)"
    verify = f'`verify_resume.py --train-cmd "... --device {device}"` (four trajectories)'
    rows = [
        [train, f"{statistics.median(ratio.train):.2f}", ", ".join(f"{t:.2f}" for t in ratio.train)],
        [verify, f"{statistics.median(ratio.verify):.2f}", ", ".join(f"{t:.2f}" for t in ratio.verify)],
        ["ratio", f"**{ratio.value:.2f}**", ""],
    ]
    return markdown(header, rows)


def environment_text(outcomes: Sequence[Outcome], seconds: float, device: str) -> str:
    """Where and when the figures were measured, from what the trainer reported (meta.gpu) and the verifier."""
    env = next((o.environment for o in outcomes if o.environment), {})
    gpu = env.get("gpu") or {}
    where = f"device {device}, no GPU reported"
    if gpu:
        where = f"{gpu.get('name')} (compute capability {gpu.get('capability')}), {_driver(gpu)}, "
        where += f"CUDA {gpu.get('cuda')}, cuDNN {gpu.get('cudnn')}"
    return (
        f"Measured on {date.today().isoformat()} with `python -B -m benchmarks.gpu` ({seconds:.0f} s in all): "
        f"{where}; torch {env.get('torch')}, Python {env.get('python')}, {env.get('platform')}.\n"
    )


def _driver(gpu: dict[str, Any]) -> str:
    """The driver's release and the CUDA it supports; the CUDA left out where the trainer could not read it."""
    release, supports = gpu.get("driver"), gpu.get("driver_cuda")
    words = f"driver {release}" if release else "driver release unknown"
    return words + (f" (supports CUDA {supports})" if supports else "")


def blocks(outcomes: Sequence[Outcome], ratio: Ratio | None, seconds: float, device: str) -> dict[str, str]:
    return {
        "environment": environment_text(outcomes, seconds, device),
        "precisions": precisions_table(outcomes),
        "faults": faults_table(outcomes),
        "nondeterministic": nondeterministic_table(outcomes),
        "ratio": ratio_table(ratio, device),
    }


def write_blocks(text: str, found: dict[str, str]) -> str:
    """docs/gpu.md's text with each block's figures between its `<!-- gpu:NAME -->` markers."""
    return write_between(text, "gpu", found)
