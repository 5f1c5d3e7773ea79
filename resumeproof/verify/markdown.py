"""verification.json as a short Markdown summary, e.g. for a CI job summary ($GITHUB_STEP_SUMMARY).

The verdict first, then what a reader needs to act: the failed checks with their first mismatch
and diagnosis, every resume's deviation, the fault matrix, and what was not tried.
"""

from pathlib import Path
from typing import Any

from resumeproof.common.fingerprint import write_atomic


def summary(document: dict[str, Any], report: Path) -> str:
    lines = [f"## resumeproof: {_verdict(document)}", "", f"`{document.get('train_cmd', '')}`", ""]
    if document.get("error"):
        lines += [f"**Could not complete:** {_cell(document['error'])}", ""]
    failed = [c for c in document.get("checks", []) if not c["passed"]]
    if failed:
        lines += ["| failed check | first mismatch | detail |", "|---|---|---|"]
        lines += [f"| {_cell(c['name'])} | {_code(c['first_mismatch'])} | {_cell(c['detail'])} |" for c in failed]
        lines.append("")
    resumes = (document.get("comparison") or {}).get("resumes", {})
    if resumes:
        lines += ["| resume | verdict | max \\|Δ\\| | first mismatch | likely lost |", "|---|---|---|---|---|"]
        for name, entry in resumes.items():
            lost = entry["diagnosis"]["lost"] if entry.get("diagnosis") else ""
            first = _code(entry["first_mismatch"])
            lines.append(f"| {name} | {entry['verdict']} | {entry['max_deviation']:.3g} | {first} | {lost} |")
        lines.append("")
    faults = document.get("faults") or {}
    if faults:
        lines += ["| omitted part | caught | caught by | diagnosed as |", "|---|---|---|---|"]
        for part, fault in faults.items():
            diagnosed = fault["diagnosis"]["lost"] if fault.get("diagnosis") else ""
            caught = "yes" if fault["detected"] else "**NO**"
            lines.append(f"| {part} | {caught} | {', '.join(fault['caught_by'])} | {diagnosed} |")
        lines.append("")
    untried = (document.get("coverage") or {}).get("untried_boundaries")
    if untried:
        lines += [f"Not tried: the epoch boundary at k = {', '.join(map(str, untried))}.", ""]
    lines.append(f"Details: `{report}`")
    return "\n".join(lines) + "\n"


def write(path: Path, document: dict[str, Any], report: Path) -> None:
    write_atomic(path, summary(document, report).encode())


def _verdict(document: dict[str, Any]) -> str:
    if document.get("error"):
        return "could not complete (exit 2)"
    if document.get("all_checks_passed"):
        return "PASSED (exit 0)"
    return "FAILED (exit 1)"


def _cell(text: Any) -> str:
    """Text for one Markdown table cell: one line, no pipe breaking the table."""
    return " ".join(str(text).split()).replace("|", "\\|") if text is not None else ""


def _code(path: str | None) -> str:
    return f"`{path}`" if path else "-"
