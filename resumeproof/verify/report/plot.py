"""verification.png: per-step loss and deviation of every trajectory against the continuous run (fork.png, drawn with
the same pyplot, is the fork's: verify/fork/report.py).

matplotlib is an optional extra (`.[plot]`), imported only when a plot is asked for, so that the
verifier's core stays small and starts fast.
"""

import math
from pathlib import Path
from typing import Any

from resumeproof.verify.run.summary import Summary

INSTALL = 'python -m pip install -c constraints.txt -e ".[plot]"'
SIZE, DPI = (10, 7), 100  # a 1000 x 700 pixel image


def available() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def deviations(continuous: list[dict], history: list[dict]) -> tuple[list[int], list[float]]:
    """Per step of `history`: the largest |Δ| of loss and lr against the continuous record of that step."""
    steps, devs = [], []
    for record in history:
        step = record["step"]
        if 1 <= step <= len(continuous):
            reference = continuous[step - 1]
            steps.append(step)
            devs.append(max(abs(record[key] - reference[key]) for key in ("loss", "lr")))
    return steps, devs


def write(
    path: Path, summaries: dict[str, Summary], atol: float, divergent: set[str], reference: str = "continuous"
) -> Path:
    """Draw every trajectory against `reference`; the `divergent` ones (that must differ) in colour."""
    plt = pyplot()
    floor = atol * 1e-4  # where an exact match (|Δ| = 0) is drawn on the log scale
    continuous = summaries[reference].history
    fig, (loss_ax, dev_ax) = plt.subplots(2, 1, figsize=SIZE, dpi=DPI, sharex=True)
    colors = [f"C{i}" for i in range(10) if i != 7]  # C7 is grey, the colour of the concordant resumes
    concordant_labelled, highlighted_count = False, 0
    for name, summary in summaries.items():
        if name == reference:
            continue
        steps, devs = deviations(continuous, summary.history)
        highlighted = name in divergent
        label = name if highlighted else (None if concordant_labelled else "resumes and interrupted runs")
        concordant_labelled |= not highlighted
        if highlighted:
            style = {"color": colors[highlighted_count % len(colors)], "linewidth": 1.2, "alpha": 0.9}
            highlighted_count += 1
        else:
            style = {"color": "0.6", "linewidth": 0.8}
        loss_ax.plot([r["step"] for r in summary.history], [r["loss"] for r in summary.history], label=label, **style)
        dev_ax.plot(steps, [d if d > 0 else floor for d in devs], marker=".", **style)
    loss_ax.plot([r["step"] for r in continuous], [r["loss"] for r in continuous], "k-", linewidth=2.5, label=reference)
    loss_ax.set_ylabel("training loss")
    loss_ax.legend(fontsize=7, ncol=3)
    dev_ax.set_yscale("log")
    dev_ax.axhline(atol, color="red", linestyle="--", label=f"atol {atol:g}")
    dev_ax.set_ylim(bottom=floor / 10, top=max(1.0, _largest(summaries, continuous, reference) * 10))
    dev_ax.set_ylabel(f"max |Δ| loss, lr vs {reference}\n(exact match drawn at {floor:g})")
    dev_ax.set_xlabel("step")
    dev_ax.legend(fontsize=8)
    return save(plt, fig, path)


def save(plt: Any, fig: Any, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    return plt


def _largest(summaries: dict[str, Summary], continuous: list[dict], reference: str) -> float:
    finite = [
        d
        for name, s in summaries.items()
        if name != reference
        for d in deviations(continuous, s.history)[1]
        if math.isfinite(d)
    ]
    return max(finite, default=1.0)
