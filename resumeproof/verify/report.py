"""What the verifier shows and keeps: rich tables on stderr, verification.json on disk."""

import platform
import time
from collections import Counter
from importlib import metadata
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from resumeproof.common import fingerprint, protocol
from resumeproof.verify.settings import FLAT
from resumeproof.verify.trajectories import DONE, FAILED, QUEUED, RUNNING, SKIPPED, Trajectory

STYLE = {DONE: "green", FAILED: "red", RUNNING: "yellow"}
# check -> column header of the fault matrix (short, so that it fits 80 columns)
FAULT_COLUMNS = {
    "step": "step", "history": "hist", "history.rows": "rows", "history.lr": "lr", "history.loss": "loss",
    "state": "state", "next": "next", "eval": "eval",
}  # fmt: skip


def console() -> Console:
    # soft_wrap: a one-line message stays one line in a log, whatever the terminal width.
    return Console(stderr=True, highlight=False, soft_wrap=True)


def progress(trajectories: list[Trajectory]) -> Table:
    """The live display: one row per process, and done / running / queued with the elapsed time."""
    count = Counter(t.status for t in trajectories)
    started = [t.started for t in trajectories if t.started is not None]
    elapsed = time.perf_counter() - min(started) if started else 0.0
    title = (
        f"trajectories: {count[DONE]} done, {count[RUNNING]} running, {count[QUEUED]} queued"
        + (f", {count[FAILED]} failed, {count[SKIPPED]} skipped" if count[FAILED] + count[SKIPPED] else "")
        + f"  ({elapsed:.1f} s)"
    )
    table = Table(title=title, title_justify="left")
    for column in ("trajectory", "status", "seconds", "exit"):
        table.add_column(column)
    for t in trajectories:
        style = STYLE.get(t.status, "dim")
        code = "" if t.exit_code is None else str(t.exit_code)
        table.add_row(t.name, f"[{style}]{t.status}[/]", f"{t.elapsed():.2f}", code)
    return table


def trajectory_entry(t: Trajectory) -> dict:
    return {
        "argv": t.argv,
        "status": t.status,
        "exit_code": t.exit_code,
        "wall_seconds": t.seconds,
        "checkpoint_sha256": t.accepted.checkpoint.sha256 if t.accepted is not None else None,
        "checkpoint_files": [f.entry() for f in t.accepted.checkpoint.files] if t.accepted is not None else [],
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


def points_table(document: dict) -> Table:
    """Every resume that must be concordant: each interruption point, each chain, the cadence run."""
    table = Table(title="every resume against the continuous run")
    for column in ("trajectory", "max |Δ| state", "max |Δ|", "mismatches", "first mismatch", "verdict"):
        table.add_column(column, justify="left" if column in ("trajectory", "first mismatch") else "right")
    for name, entry in document["comparison"]["resumes"].items():
        style = "green" if entry["verdict"] == "concordant" else "red"
        cells = [_fmt(entry[key]) for key in ("max_state_deviation", "max_deviation", "mismatches", "first_mismatch")]
        table.add_row(name, *cells, f"[{style}]{entry['verdict']}[/]")
    return table


def fault_matrix(document: dict) -> Table:
    """Faults as rows, checks as columns: a mark where a check caught the omitted part."""
    faults = document["faults"]
    seen = {check for fault in faults.values() for check in fault["caught_by"]}
    columns = [c for c in FAULT_COLUMNS if c in seen] + sorted(seen - set(FAULT_COLUMNS))
    title = (
        "fault matrix: resume without PART, caught by (rows, lr, loss: history fields; hist: its length), diagnosed as"
    )
    table = Table(title=title, pad_edge=False)
    table.add_column("omitted", no_wrap=True)
    for column in columns:
        table.add_column(FAULT_COLUMNS.get(column) or column, justify="center", no_wrap=True)
    table.add_column("diagnosis", no_wrap=True)  # what a user would be told was lost
    for part, fault in faults.items():
        marks = ["[green]x[/]" if column in fault["caught_by"] else "" for column in columns]
        found = fault["diagnosis"]["lost"] if fault["diagnosis"] else "?"
        table.add_row(part, *marks, f"[green]{found}[/]" if fault["detected"] else "[red]NOT CAUGHT[/]")
    return table


def diagnoses(document: dict) -> list[str]:
    """One line per resume that should match and does not, and for a negative control that did not diverge."""
    lines = []
    comparison = document["comparison"]
    for name, entry in comparison["resumes"].items():
        if entry["verdict"] != "concordant" and entry["diagnosis"]:
            lines.append(_diagnosis_line(name, entry["diagnosis"]))
    negative = comparison["no_rng_resume"]
    if negative["verdict"] == "concordant" or negative.get("identical_to_full_resume"):
        found = negative["diagnosis"] or {"lost": "random state", "explanation": "it matches the continuous run"}
        lines.append(_diagnosis_line("resumed-no-rng", found))
    return lines


def _diagnosis_line(name: str, found: dict) -> str:
    where = f" from update {found['step']}" if found.get("step") else ""
    evidence = f" [{found['evidence']}]" if found.get("evidence") else ""
    return f"diagnosis {name}: likely lost {found['lost']}{where}: {found['explanation']}{evidence}"


def coverage_note(document: dict) -> str | None:
    """What a verification did not try, so that a pass at one point is not read as a pass at every point."""
    untried = (document.get("coverage") or {}).get("untried_boundaries")
    if untried:
        ks = ", ".join(map(str, untried))
        return f"not tried: the epoch boundary at k = {ks} (--interrupt-at epochs tries every boundary)"
    if len(document["interrupt_at"]) == 1:
        return f"tried k = {document['interrupt_at'][0]} only (--interrupt-at epochs or all try more points)"
    return None


def verdict_line(document: dict) -> str:
    if document["error"]:
        return f"[red]could not complete:[/] {document['error']}"
    if document["all_checks_passed"]:
        extra = f", all {len(document['faults'])} faults caught" if document["faults"] else ""
        return f"[green]PASSED:[/] every resume concordant, resume without RNG restore divergent{extra}"
    failed = [c["name"] for c in document["checks"] if not c["passed"]]
    blind = f" The protocol is blind to: {', '.join(document['blind_to'])}." if document["blind_to"] else ""
    return f"[red]FAILED:[/] {'; '.join(failed)}.{blind}"


def print_report(out: Console, document: dict) -> None:
    if document["comparison"]:
        out.print(comparison_table(document))
        if len(document["comparison"]["resumes"]) > 1:
            out.print(points_table(document))
    if document["faults"]:
        out.print(fault_matrix(document))
        for part, fault in document["faults"].items():
            if part == FLAT:  # the one fault that is a file format: say what it lacks
                out.print(f"flat file: {fault['cause']}; caught by {', '.join(fault['caught_by']) or 'nothing'}")
    if document["comparison"]:
        for line in diagnoses(document):
            out.print(line, markup=False)
    note = coverage_note(document) if document["comparison"] else None
    if note:
        out.print(note)
    out.print(verdict_line(document))


def print_chaos(out: Console, document: dict) -> None:
    table = Table(title="chaos test")
    table.add_column("check")
    table.add_column("passed", justify="center")
    for name, passed in document["checks"].items():
        table.add_row(name, "[green]yes[/]" if passed else "[red]NO[/]")
    out.print(table)
    signals = ", ".join(f"{n} {name}" for name, n in document["kills_by_signal"].items())
    phases = ", ".join(f"{n} {phase}" for phase, n in document["kills_by_phase"].items())
    out.print(
        f"{len(document['kills'])} signals ({signals}; landed: {phases}); {document['trainer_starts']} trainer "
        f"starts; {document['replayed_steps']} steps replayed"
    )
    verdict = "[green]PASSED:[/] nothing lost" if document["all_checks_passed"] else "[red]FAILED[/]"
    out.print(verdict)
