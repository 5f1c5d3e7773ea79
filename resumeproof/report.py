"""What the verifier shows and keeps: rich tables on stderr, verification.json on disk."""

import platform
from importlib import metadata
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from resumeproof import fingerprint, protocol
from resumeproof.compare import Comparison
from resumeproof.trajectories import DONE, FAILED, RUNNING, Trajectory

STYLE = {DONE: "green", FAILED: "red", RUNNING: "yellow"}


def console() -> Console:
    # soft_wrap: a one-line message stays one line in a log, whatever the terminal width.
    return Console(stderr=True, highlight=False, soft_wrap=True)


def progress_table(trajectories: list[Trajectory]) -> Table:
    table = Table(title="trajectories", title_justify="left")
    for column in ("trajectory", "status", "seconds", "exit"):
        table.add_column(column)
    for t in trajectories:
        style = STYLE.get(t.status, "dim")
        code = "" if t.exit_code is None else str(t.exit_code)
        table.add_row(t.name, f"[{style}]{t.status}[/]", f"{t.elapsed():.2f}", code)
    return table


def check(name: str, passed: bool, comparison: Comparison | None = None, detail: str | None = None) -> dict:
    first = comparison.mismatches[0] if comparison and comparison.mismatches else None
    return {
        "name": name,
        "passed": passed,
        "max_abs_diff": comparison.max_abs_diff if comparison else None,
        "first_mismatch": first.path if first else None,
        "detail": detail or (first.reason if first else None),
    }


def resume_entry(continuous: dict, resumed: dict, full: Comparison, state: Comparison) -> dict:
    """One column of the comparison: how far a resume lands from the continuous run."""
    mse, reference = resumed["eval"].get("mse"), continuous["eval"].get("mse")
    numbers = protocol.is_number(mse) and protocol.is_number(reference)
    return {
        "verdict": "concordant" if full.concordant else "divergent",
        "max_state_deviation": state.max_abs_diff,
        "max_deviation": full.max_abs_diff,
        "final_mse": mse if protocol.is_number(mse) else None,
        "mse_deviation": abs(mse - reference) if numbers else None,
        "mismatches": full.count,
        "first_mismatch": full.first_path,
    }


def trajectory_entry(t: Trajectory) -> dict:
    return {
        "argv": t.argv,
        "status": t.status,
        "exit_code": t.exit_code,
        "wall_seconds": t.seconds,
        "checkpoint_sha256": t.results.get("sha256"),
        "log": str(t.log),
        "error": t.error,
    }


def environment(meta: dict[str, Any]) -> dict[str, Any]:
    """The verifier's interpreter and packages; threads, dtype and device as the trainer reports them."""
    return {
        "python": platform.python_version(),
        "torch": _version("torch"),
        "numpy": _version("numpy"),
        "platform": platform.platform(),
        "threads": meta.get("threads"),
        "dtype": meta.get("dtype"),
        "device": meta.get("device"),
    }


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def write(path: Path, document: dict) -> None:
    fingerprint.write_atomic(path, protocol.dumps(document).encode())


def _fmt(value: Any) -> str:
    return "-" if value is None else f"{value:.3g}" if isinstance(value, float) else str(value)


def comparison_table(document: dict) -> Table:
    columns = {"full_resume": "full resume", "no_rng_resume": "resume without RNG (negative control)"}
    table = Table(title=f"against the continuous run (atol {document['tolerance']['atol']:g}, rtol 0)")
    table.add_column("")
    for title in columns.values():
        table.add_column(title, justify="right")
    entries = [document["comparison"][key] for key in columns]
    rows = [
        ("max |Δ| state (weights, moments, ...)", "max_state_deviation"),
        ("max |Δ| anywhere (floats)", "max_deviation"),
        ("mismatches", "mismatches"),
        ("final MSE", "final_mse"),
        ("MSE deviation", "mse_deviation"),
        ("first mismatch", "first_mismatch"),
        ("verdict", "verdict"),
    ]
    for label, key in rows:
        table.add_row(label, *(_fmt(entry[key]) for entry in entries))
    return table


def verdict_line(document: dict) -> str:
    if document["error"]:
        return f"[red]could not complete:[/] {document['error']}"
    if document["all_checks_passed"]:
        return "[green]PASSED:[/] full resume concordant, resume without RNG restore divergent (negative control)"
    failed = [c["name"] for c in document["checks"] if not c["passed"]]
    return f"[red]FAILED:[/] {', '.join(failed)}"


def print_report(out: Console, document: dict) -> None:
    if document["comparison"]:
        out.print(comparison_table(document))
    out.print(verdict_line(document))
