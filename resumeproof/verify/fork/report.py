"""A fork's report on the terminal: the branches side by side, what proves the fork fair or why it is not, who ended
lowest, the verdict last (rich, on stderr)."""

import shlex

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from resumeproof.common.protocol import CheckKind
from resumeproof.verify.fork.result import Fork


def table(f: Fork) -> Table:
    lowest = f.lowest.final_loss if f.lowest else None
    proven = {c.id.trajectory: c.passed for c in f.checks if c.id.kind is CheckKind.INPUTS}
    t = Table(title=f"fork of {f.checkpoint} at step {f.fork_step}: {f.steps} updates per branch, bit for bit")
    for column in ("branch", "overrides", "parts at", "final loss", "above lowest", "first update's inputs"):
        t.add_column(column, justify="left" if column in ("branch", "overrides") else "right")
    for b in f.branches:
        above = b.final_loss - lowest if b.final_loss is not None and lowest is not None else None
        inputs = "-" if b.name not in proven else "[green]the control's[/]" if proven[b.name] else "[red]differ[/]"
        parts = _at(b.parts_at, b.parted_by) if b.overrides else "-"  # the control is what the others part from
        cells = (shlex.join(b.overrides) or "-", parts, _number(b.final_loss), _number(above))
        t.add_row(escape(b.name), *map(escape, cells), inputs)
    return t


def notes(f: Fork) -> list[str]:
    """What the verdict rests on, and what an auditor must not miss."""
    lines = [c.name for c in f.checks if c.passed and c.id.kind in (CheckKind.CONTINUATION, CheckKind.DETERMINISM)]
    if f.branches and not f.continuation:
        lines.append(
            f"no continuation: the original run's files hold no update after step {f.fork_step}; fairness rests on "
            "the first update's inputs and the control's repeat"
        )
    lines += [
        f"{b.name} is identical to the control: its override changed nothing the records show" for b in f.no_change()
    ]
    proven = {c.id.trajectory for c in f.checks if c.id.kind is CheckKind.INPUTS and c.passed}
    lines += [
        f"{b.name}, first update: {b.first_difference}" for b in f.branches if b.name in proven and b.first_difference
    ]
    return lines


def verdict(f: Fork) -> str:
    if f.error:
        return f"[red]could not complete:[/] {escape(f.error)}"
    outcome = escape(f.outcome() or "no branch ran")
    if f.fair:
        return f"[green]FAIR:[/] every branch starts from the control's state and continues the original run; {outcome}"
    return f"[red]NOT FAIR:[/] {escape('; '.join(f.reasons))}. {outcome} (no fair comparison)"


def print_fork(out: Console, f: Fork) -> None:
    if f.branches:
        out.print(table(f))
    for line in notes(f):
        out.print(line, markup=False)
    out.print(verdict(f))


def _at(step: int | None, how: str | None) -> str:
    if step is not None:
        return str(step)
    return "never" if how is None else "same history"


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.6g}"
