"""A fork's report on the terminal: the branches side by side, what proves the fork fair or why it is not, who ended
lowest, the verdict last (rich, on stderr); and fork.png: the history up to the fork point and each branch's loss from
it."""

import shlex
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from resumeproof.common.protocol import CONTROL, CheckKind
from resumeproof.verify.fork.result import BranchResult, Fork
from resumeproof.verify.report import plot


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


def png(path: Path, fork: Fork) -> Path:
    """The history up to the fork point, then each branch's loss from it (the control dashed), a mark where each
    parts from the control; the verdict and who ended lowest, by how much, in the title."""
    plt = plot.pyplot()
    fig, ax = plt.subplots(figsize=plot.SIZE, dpi=plot.DPI)
    before = fork.before
    ax.plot([p.step for p in before], [p.loss for p in before], "k-", linewidth=2, label="the original run's history")
    ax.axvline(fork.fork_step or 0, color="0.5", linestyle=":", label=f"fork point: step {fork.fork_step}")
    for i, branch in enumerate(fork.branches):
        style = {"color": "k", "linestyle": "--"} if branch.name == CONTROL else {"color": f"C{i % 10}"}
        points = (*before[-1:], *branch.curve)  # from the fork point on
        ax.plot([p.step for p in points], [p.loss for p in points], label=_label(branch), **style)
        parted = [p for p in branch.curve if p.step == branch.parts_at]
        ax.plot([p.step for p in parted], [p.loss for p in parted], marker="o", linestyle="", color=style["color"])
    verdict = "fair" if fork.fair else "NOT FAIR: " + "; ".join(fork.reasons)[:120]
    ax.set_title(f"fork at step {fork.fork_step} ({verdict})\n{fork.outcome() or ''}", fontsize=9)
    ax.set_xlabel("step")
    ax.set_ylabel("training loss")
    ax.legend(fontsize=8)
    return plot.save(plt, fig, path)


def _label(branch: BranchResult) -> str:
    said = f"{branch.name}: {shlex.join(branch.overrides)}" if branch.overrides else f"{branch.name} (no override)"
    return said + (f", parts at update {branch.parts_at}" if branch.parts_at is not None else "")
