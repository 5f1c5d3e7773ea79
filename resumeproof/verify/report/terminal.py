"""What the verifier shows on the terminal: the live progress of its processes, then the report of one
`Verification` or `ChaosResult` (rich tables and one-line notes on stderr, the verdict last)."""

import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.markup import escape
from rich.table import Table

from resumeproof.common import observation
from resumeproof.common.protocol import FLAT, CheckKind
from resumeproof.verify.chaos.result import ChaosResult
from resumeproof.verify.report.result import Verification
from resumeproof.verify.report.verdict import PASSED, denied
from resumeproof.verify.run.trajectories import Trajectory
from resumeproof.verify.vocabulary.findings import CONCORDANT, Check, FaultStatus, Resume, diagnosed
from resumeproof.verify.vocabulary.status import Status

STYLE = {Status.DONE: "green", Status.FAILED: "red", Status.RUNNING: "yellow"}
FAULT_STATUS = {FaultStatus.NOT_CAUGHT: "[red]NOT CAUGHT[/]", FaultStatus.NOT_APPLICABLE: "[yellow]not applicable[/]"}
# check -> column header of the fault matrix (short, so that it fits 80 columns)
FAULT_COLUMNS = {
    "step": "step",
    "history": "hist",
    "history.rows": "rows",
    "history.lr": "lr",
    "history.loss": "loss",
    "state": "state",
    "next": "next",
    "eval": "eval",
}
# the rows of the comparison table: each reads one measure off a resume
COMPARISON_ROWS: tuple[tuple[str, Callable[[Resume], Any]], ...] = (
    ("max |Δ| state (weights, moments, ...)", lambda r: r.max_state_deviation),
    ("max |Δ| anywhere (floats)", lambda r: r.max_deviation),
    ("mismatches", lambda r: r.mismatches),
    ("final MSE", lambda r: r.final_mse),
    ("MSE deviation", lambda r: r.mse_deviation),
    ("first mismatch", lambda r: r.first_mismatch),
    ("verdict", lambda r: r.verdict),
)


def console() -> Console:
    # soft_wrap: a one-line message stays one line in a log, whatever the terminal width.
    return Console(stderr=True, highlight=False, soft_wrap=True)


def progress(trajectories: list[Trajectory]) -> Table:
    """The live display: one row per process, and done / running / queued with the elapsed time."""
    count = Counter(t.outcome.status for t in trajectories)
    started = [t.outcome.started for t in trajectories if t.outcome.started is not None]
    elapsed = time.perf_counter() - min(started) if started else 0.0
    title = (
        f"trajectories: {count[Status.DONE]} done, {count[Status.RUNNING]} running, {count[Status.QUEUED]} queued"
        + (
            f", {count[Status.FAILED]} failed, {count[Status.SKIPPED]} skipped"
            if count[Status.FAILED] + count[Status.SKIPPED]
            else ""
        )
        + f"  ({elapsed:.1f} s)"
    )
    table = Table(title=title, title_justify="left")
    for column in ("trajectory", "status", "seconds", "exit"):
        table.add_column(column)
    for t in trajectories:
        style = STYLE.get(t.outcome.status, "dim")
        code = "" if t.outcome.exit_code is None else str(t.outcome.exit_code)
        table.add_row(t.name, f"[{style}]{t.outcome.status}[/]", f"{t.elapsed():.2f}", code)
    return table


@contextmanager
def live(out: Console, trajectories: list[Trajectory]) -> Iterator[Callable[[], None]]:
    """The live display of the trajectories' progress on `out` while the caller runs them: yields the refresh to
    call whenever one changes (verify/run/trajectories.py's `run_all` takes it)."""
    with Live(progress(trajectories), console=out, refresh_per_second=8) as shown:
        yield lambda: shown.update(progress(trajectories))
    if not out.is_terminal:
        out.line()  # Live ends its last line only on a terminal


def _fmt(value: Any) -> str:
    return "-" if value is None else f"{value:.3g}" if isinstance(value, float) else str(value)


def comparison_table(v: Verification) -> Table:
    full, negative = v.full_resume, v.negative
    assert full is not None and negative is not None
    table = Table(title=f"against the continuous run (atol {v.atol:g}, rtol 0)")
    table.add_column("")
    table.add_column("full resume", justify="right")
    table.add_column("resume without RNG (negative control)", justify="right")
    for label, measure in COMPARISON_ROWS:
        table.add_row(label, _fmt(measure(full)), _fmt(measure(negative)))
    return table


def points_table(v: Verification) -> Table:
    """Every resume that must be concordant: each interruption point, each chain, the cadence run."""
    table = Table(title="every resume against the continuous run")
    for column in ("trajectory", "max |Δ| state", "max |Δ|", "mismatches", "first mismatch", "verdict"):
        table.add_column(column, justify="left" if column in ("trajectory", "first mismatch") else "right")
    for name, entry in v.resumes.items():
        style = "green" if entry.verdict == CONCORDANT else "red"
        cells = [
            _fmt(x) for x in (entry.max_state_deviation, entry.max_deviation, entry.mismatches, entry.first_mismatch)
        ]
        table.add_row(name, *cells, f"[{style}]{entry.verdict}[/]")
    return table


def fault_matrix(v: Verification) -> Table:
    """Faults as rows, checks as columns: a mark where a check caught the omitted part."""
    seen = {check for fault in v.faults.values() for check in fault.caught_by}
    columns = [c for c in FAULT_COLUMNS if c in seen] + sorted(seen - set(FAULT_COLUMNS))
    title = (
        "fault matrix: resume without PART, caught by (rows, lr, loss: history fields; hist: its length), diagnosed as"
    )
    if v.protocol == observation.FORMAT:  # verify --observe: what the observer's records hold
        title = "fault matrix: resume without PART's load_state_dict, caught by, diagnosed as"
    table = Table(title=title, pad_edge=False)
    table.add_column("omitted", no_wrap=True)
    for column in columns:
        table.add_column(FAULT_COLUMNS.get(column) or column, justify="center", no_wrap=True)
    table.add_column("diagnosis", no_wrap=True)  # what a user would be told was lost
    for part, fault in v.faults.items():
        marks = ["[green]x[/]" if column in fault.caught_by else "" for column in columns]
        found = fault.diagnosis.named if fault.diagnosis else "?"
        said = FAULT_STATUS.get(fault.status, f"[green]{escape(found)}[/]")
        table.add_row(part, *marks, said)
    return table


def not_applicable_lines(v: Verification) -> list[str]:
    """Each fault that blocked nothing, said where it cannot be missed: a user who asked for it expected the script
    to restore that part, and it never does."""
    return [
        f"not applicable: resume without {part}: {why}, so blocking it changed nothing; "
        f"if the script has a {part}, it never restores it"
        for part, why in v.not_applicable.items()
    ]


def diagnosis_lines(v: Verification) -> list[str]:
    """One line per failed check that has a diagnosis: the trajectory, what was likely lost, the evidence."""
    return [_line(c) for c in diagnosed(v.checks) if c.id.kind is not CheckKind.DETERMINISM]


def _line(c: Check) -> str:
    assert c.diagnosis is not None
    name = c.id.trajectory or c.name
    evidence = f" [{c.diagnosis.evidence}]" if c.diagnosis.evidence else ""
    return f"diagnosis {name}: {c.diagnosis.sentence()}{evidence}"


def coverage_note(v: Verification) -> str | None:
    """What a verification did not try, so that a pass at one point is not read as a pass at every point."""
    untried = v.coverage.untried_boundaries if v.coverage else None
    if untried:
        ks = ", ".join(map(str, untried))
        return f"not tried: the epoch boundary at k = {ks} (--interrupt-at epochs tries every boundary)"
    if len(v.interrupt_at) == 1:
        # verify --observe reads epochs off --epochs or iterators only; every script's saves are its own points
        more = "checkpoints or all" if v.protocol == observation.FORMAT else "epochs or all"
        return f"tried k = {v.interrupt_at[0]} only (--interrupt-at {more} try more points)"
    return None


def unusable_lines(v: Verification) -> list[str]:
    """Where a run's output holds a number that is not finite (judge/summaries/finite.py): one line per failed check."""
    return [f"{c.id.trajectory}: {c.detail}" for c in v.of_kind(CheckKind.FINITE) if not c.passed and c.detail]


def nonfinite_note(v: Verification) -> str | None:
    if not v.nonfinite:
        return None
    shown = ", ".join(v.nonfinite[:4]) + (", ..." if len(v.nonfinite) > 4 else "")
    return (
        f"note: equal infinities in state matched at {shown} (NaN never matches; a non-finite value in the model, "
        "the optimizer, the history, next or eval fails)"
    )


def gpu_note(v: Verification) -> str | None:
    """Trajectories that ran on different GPUs, drivers or libraries prove a resume across them: say so."""
    gpus = v.environment.get("gpus")
    if not gpus:
        return None
    shown = "; ".join(f"{name}: {_gpu(gpu)}" for name, gpu in gpus.items())
    return f"note: the trajectories ran on different GPUs or software ({shown}): this is a resume across them"


def across_note(v: Verification) -> str | None:
    """A verification whose resumes ran in another environment (records/versions.py): both, and how they differ."""
    if v.across is None:
        return None
    return f"note: resumed by other code ({v.across.said}): {v.across.sides()}"


def _gpu(gpu: Any) -> str:
    if not isinstance(gpu, dict):
        return "no GPU" if gpu is None else str(gpu)
    return ", ".join(f"{gpu[key]}" for key in ("name", "driver", "cuda", "cudnn") if gpu.get(key) is not None)


def checked_lines(v: Verification) -> list[str]:
    """`verify --observe` resumes from the script's own checkpoint whatever it holds: what `check` says of it."""
    return [f"the script's checkpoint, by resumeproof check (not part of the verdict): {c.line}" for c in v.checked()]


def verdict_line(v: Verification) -> str:
    """The last line: could not complete, not deterministic, passed or failed, and what failed
    (verify/report/verdict.py)."""
    said = v.verdict
    return f"[{'green' if said.outcome == PASSED else 'red'}]{said.label}:[/] {escape(said.said)}"


def print_report(out: Console, v: Verification) -> None:
    if v.full_resume is not None and v.negative is not None:
        out.print(comparison_table(v))
        if len(v.resumes) > 1:
            out.print(points_table(v))
    if v.faults:
        out.print(fault_matrix(v))
        flat = v.faults.get(FLAT)
        if flat is not None:  # the one fault that is a file format: say what it lacks
            out.print(f"flat file: {flat.cause}; caught by {', '.join(flat.caught_by) or 'nothing'}")
    for line in [*diagnosis_lines(v), *unusable_lines(v)]:
        out.print(line, markup=False)
    for line in not_applicable_lines(v):
        out.print(f"[yellow]{escape(line)}[/]")
    notes = [f"note: {note}" for note in v.notes]
    checked = (*checked_lines(v), v.reuse_line())
    for note in (
        *notes,
        nonfinite_note(v),
        gpu_note(v),
        across_note(v),
        coverage_note(v) if v.checks else None,
        *checked,
    ):
        if note:
            out.print(note, markup=False)
    out.print(verdict_line(v))


def print_chaos(out: Console, result: ChaosResult) -> None:
    table = Table(title="chaos test")
    table.add_column("check")
    table.add_column("passed", justify="center")
    for check in result.checks:
        table.add_row(check.name, "[green]yes[/]" if check.passed else "[red]NO[/]")
    out.print(table)
    signals = ", ".join(f"{n} {name}" for name, n in result.kills_by_signal.items())
    phases = ", ".join(f"{n} {phase}" for phase, n in result.kills_by_phase.items())
    out.print(
        f"{len(result.kills)} signals ({signals}; landed: {phases}); {result.trainer_starts} trainer "
        f"starts; {result.replayed_steps} steps replayed"
    )
    failed = [c for c in result.checks if not c.passed]
    said = ". ".join(denied(c) for c in failed)
    out.print("[green]PASSED:[/] nothing lost" if not failed else f"[red]FAILED:[/] {escape(said)}")
