"""A verification as a short Markdown summary, e.g. for a CI job summary ($GITHUB_STEP_SUMMARY).

The verdict first, with the line the terminal ends with (what failed, where, what the diagnosis blames), then
what a reader needs to act: the failed checks with what failed and their diagnosis, every resume's deviation, the
fault matrix, and what was not tried.
"""

from pathlib import Path
from typing import Any

from resumeproof.common.fingerprint import write_atomic
from resumeproof.verify.report.result import Verification
from resumeproof.verify.report.verdict import PASSED, failure
from resumeproof.verify.vocabulary.findings import FaultStatus

CAUGHT = {FaultStatus.CAUGHT: "yes", FaultStatus.NOT_CAUGHT: "**NO**", FaultStatus.NOT_APPLICABLE: "not applicable"}


def summary(v: Verification, report: Path) -> str:
    said = v.verdict
    lines = [f"## resumeproof: {verdict(v)}", "", f"`{v.train_cmd}`", "", f"**{said.label}:** {_cell(said.said)}", ""]
    if not v.deterministic:
        d = v.determinism
        judged = "; judged by its restore, bit for bit, and within its measured spread" if d.within_spread else ""
        lines += [f"**Not deterministic:** {_cell(d.detail)} (first at {_code(d.first_mismatch)}){judged}", ""]
    if v.across is not None:
        lines += [f"**Resumed by other code** ({_cell(v.across.said)}): {_cell(v.across.sides())}.", ""]
    failed = v.failed()
    if failed:
        lines += ["| failed check | what failed | detail | diagnosis |", "|---|---|---|---|"]
        for c in failed:
            why = c.diagnosis.sentence() if c.diagnosis else ""
            lines.append(f"| {_cell(c.name)} | {_cell(failure(c, v))} | {_cell(c.detail)} | {_cell(why)} |")
        lines.append("")
    if v.resumes:
        lines += ["| resume | verdict | max \\|Δ\\| | first mismatch | likely lost |", "|---|---|---|---|---|"]
        for name, entry in v.resumes.items():
            lost = entry.diagnosis.named if entry.diagnosis else ""
            first = _code(entry.first_mismatch)
            lines.append(f"| {name} | {entry.verdict} | {entry.max_deviation:.3g} | {first} | {lost} |")
        lines.append("")
    if v.faults:
        lines += ["| omitted part | caught | caught by | diagnosed as |", "|---|---|---|---|"]
        for part, fault in v.faults.items():
            diagnosed = fault.diagnosis.named if fault.diagnosis else _cell(fault.not_applicable)
            caught = CAUGHT[fault.status]
            lines.append(f"| {part} | {caught} | {', '.join(fault.caught_by)} | {diagnosed} |")
        lines.append("")
    lines += [f"Note: {_cell(note)}." for note in v.notes] + ([""] if v.notes else [])
    untried = v.coverage.untried_boundaries if v.coverage else None
    if untried:
        lines += [f"Not tried: the epoch boundary at k = {', '.join(map(str, untried))}.", ""]
    for checked in v.checked():
        lines += [
            f"The script's checkpoint, by `resumeproof check` (not part of the verdict): {_cell(checked.line)}",
            "",
        ]
    lines += [_cell(v.reuse_line()) + ".", ""] if v.reuse_line() else []
    lines.append(f"Details: `{report}`")
    return "\n".join(lines) + "\n"


def write(path: Path, v: Verification, report: Path) -> None:
    write_atomic(path, summary(v, report).encode())


def verdict(v: Verification) -> str:
    """The heading's outcome and exit code (verify/report/verdict.py says what it rests on, on the line below)."""
    said = v.verdict
    if said.outcome == PASSED and not v.deterministic:
        return "PASSED, not deterministic: within its measured spread (exit 0)"
    return f"{said.label} (exit {said.exit_code})"


def _cell(text: Any) -> str:
    """Text for one Markdown table cell: one line, no pipe breaking the table."""
    return " ".join(str(text).split()).replace("|", "\\|") if text is not None else ""


def _code(path: str | None) -> str:
    return f"`{path}`" if path else "-"
