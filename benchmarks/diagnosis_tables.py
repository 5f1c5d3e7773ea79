"""The diagnosis corpus's report (benchmarks/diagnosis.py): the per-case table and the counts, in Markdown."""

from collections import Counter

from benchmarks.diagnosis_cases import Case
from benchmarks.diagnosis_score import RIGHT, VAGUE, WRONG, Result


def case_table(cases: dict[str, Case], results: list[Result]) -> str:
    rows = [
        "| case | true cause | exit (expected) | verdict | diagnosis said | diagnosis |",
        "|---|---|---|---|---|---|",
    ]
    for r in results:
        said = r.said
        if r.faults:
            said = ", ".join(f"{part}: {named}" for part, (_, named) in r.faults.items())
            said = f"faults {said}"
        cause, exits = cases[r.case].cause, f"{r.exit} ({r.expected_exit})"
        rows.append(f"| {r.case} | {cause} | {exits} | {r.verdict} | {said} | {r.diagnosis} |")
    return "\n".join(rows)


def counts(cases: dict[str, Case], results: list[Result]) -> dict[str, Counter]:
    groups: dict[str, Counter] = {"bugs": Counter(), "controls": Counter(), "faults": Counter(), "all cases": Counter()}
    for r in results:
        group = groups["controls" if cases[r.case].is_control else "bugs"]
        for counter in (group, groups["all cases"]):
            counter["cases"] += 1
            counter[f"verdict {r.verdict}"] += 1
            counter[r.diagnosis] += 1
        for mark, _ in r.faults.values():
            groups["faults"]["cases"] += 1
            groups["faults"][mark] += 1
    return groups


def count_table(groups: dict[str, Counter]) -> str:
    rows = [
        "| | cases | verdict right | verdict wrong | diagnosis right | vague | wrong |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, c in groups.items():
        verdicts = ("-", "-") if name == "faults" else (c["verdict right"], c["verdict wrong"])
        rows.append(f"| {name} | {c['cases']} | {verdicts[0]} | {verdicts[1]} | {c[RIGHT]} | {c[VAGUE]} | {c[WRONG]} |")
    return "\n".join(rows)


def corpora_table(corpora: dict[str, dict[str, Counter]]) -> str:
    """The counts of every corpus and of all of them in one table (docs/checks.md), a corpus's empty rows left out."""
    rows = [
        "| corpus | | cases | verdict right | verdict wrong | diagnosis right | vague | wrong |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for corpus, groups in corpora.items():
        for name, c in groups.items():
            if c["cases"] or name == "all cases":
                verdicts = ("-", "-") if name == "faults" else (c["verdict right"], c["verdict wrong"])
                counted = f"{c['cases']} | {verdicts[0]} | {verdicts[1]} | {c[RIGHT]} | {c[VAGUE]} | {c[WRONG]}"
                rows.append(f"| {corpus} | {name} | {counted} |")
    return "\n".join(rows)
