"""The framework audit of docs/audit.md, reproduced by one command: every row verified again, from fresh processes.

    python -B -m benchmarks.audit --output runs/audit            # prints the table, writes runs/audit/audit.json
    python -B -m benchmarks.audit --output runs/audit --write    # also docs/audit.json and the generated tables

Per framework: the documented resume path; each confirmed cause alone (every other cause
removed, examples/causes.py), which must diverge; all causes removed, which must be exact (so the
list is complete); and the user-level fix. Each row is one `verify_resume.py --steps 12
--interrupt-at epochs` (the verifier finds the epoch boundary at 6 and the mid-epoch points 3 and
9 from the continuous run); the plain loop and each fix also get the fault matrix from k = 9,
mid-epoch in the second epoch. `tests/e2e/test_examples.py` checks that the examples still give these
verdicts, and `tests/docs/test_audit_docs.py` that the documents show this file's table.
"""

import argparse
import importlib.metadata
import json
import re
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.helpers import REPO, write_between
from examples import causes  # the cause table, torch-free to import (examples/ is a namespace package)

STEPS, POINTS, FAULT_POINT = 12, "epochs", 9
AUDIT_JSON = REPO / "docs" / "audit.json"
BRIEF = ("careful", "documented", "user fix")  # the rows the README shows: each example as shipped, and its fix
STANDARD_FAULTS = ("model", "optimizer", "scheduler", "data", "rng-python", "rng-numpy", "rng-torch")
# The Accelerate and transformers fixes draw augmentation from a generator per example: nothing in them draws
# from Python's or NumPy's global generator, so leaving those unrestored changes nothing there.
NO_GLOBAL_AUGMENTATION = ("model", "optimizer", "scheduler", "data", "rng-torch")


@dataclass(frozen=True, kw_only=True)
class Framework:
    name: str  # as in examples/causes.py
    title: str  # as the tables show it
    package: str  # whose version the audit is of
    script: str  # examples/...
    allow: tuple[str, ...] = ()  # --allow-unsafe-pickle patterns its checkpoint needs (docs/audit.md says why)
    fix_faults: tuple[str, ...] = STANDARD_FAULTS  # the parts the fixed run can show lost (it draws from them)


FRAMEWORKS = (
    Framework(name="plain", title="plain PyTorch, torch", package="torch", script="examples/plain_dataloader.py"),
    Framework(
        name="accelerate",
        title="Accelerate",
        package="accelerate",
        script="examples/accelerate_example.py",
        allow=("random_states_*.pkl",),
        fix_faults=NO_GLOBAL_AUGMENTATION,
    ),
    Framework(name="lightning", title="Lightning", package="lightning", script="examples/lightning_example.py"),
    Framework(
        name="transformers",
        title="transformers Trainer",
        package="transformers",
        script="examples/transformers_example.py",
        allow=("rng_state.pth", "training_args.bin"),
        fix_faults=NO_GLOBAL_AUGMENTATION,
    ),
)
BY_NAME = {fw.name: fw for fw in FRAMEWORKS}


@dataclass(frozen=True, kw_only=True)
class Row:
    framework: str
    variant: str  # documented (careful, for the plain loop), "<CODE> alone", all causes removed, user fix
    flags: tuple[str, ...] = ()  # the example's variant flags
    faults: tuple[str, ...] = ()  # parts for the fault matrix run (none: no such run)

    @property
    def key(self) -> str:
        return f"{self.framework}/{self.variant}"


def _repeat(flag: str, values: Iterable[str]) -> tuple[str, ...]:
    """`flag` before each value: ("--remove-cause", "A", "--remove-cause", "B")."""
    return tuple(arg for value in values for arg in (flag, value))


def rows() -> list[Row]:
    """Every row of the audit, in table order."""
    out = []
    for fw in FRAMEWORKS:
        codes = causes.FRAMEWORK_CAUSES[fw.name]
        if not codes:  # no framework path to document: the loop saved the careful way, with its fault matrix
            out.append(Row(framework=fw.name, variant="careful", faults=fw.fix_faults))
            continue
        out.append(Row(framework=fw.name, variant="documented"))
        for code in codes:
            others = _repeat("--remove-cause", (other for other in codes if other != code))
            out.append(Row(framework=fw.name, variant=f"{code} alone", flags=others))
        removed = _repeat("--remove-cause", codes)
        out.append(Row(framework=fw.name, variant="all causes removed", flags=removed))
        out.append(Row(framework=fw.name, variant="user fix", flags=("--fix", "user"), faults=fw.fix_faults))
    return out


def verify_command(row: Row, output: Path, points: str = POINTS, faults: tuple[str, ...] = ()) -> list[str]:
    """The verifier's command line for one row, as a user would type it."""
    fw = BY_NAME[row.framework]
    train = " ".join(["python", "-B", fw.script, *row.flags])
    argv = [sys.executable, "-B", "verify_resume.py", "--output", str(output), "--steps", str(STEPS)]
    argv += ["--interrupt-at", points, *_repeat("--allow-unsafe-pickle", fw.allow)]
    if faults:
        argv += ["--faults", ",".join(faults)]
    return [*argv, "--train-cmd", train]


@dataclass(kw_only=True)
class Result:
    row: Row
    exit_code: int
    points: dict[str, dict[str, Any]]  # k -> verdict, first mismatch, what the diagnosis says was lost
    negative: dict[str, Any]
    faults: dict[str, bool] = field(default_factory=dict)  # part -> detected
    seconds: float = 0.0

    def entry(self) -> dict[str, Any]:
        return {**asdict(self), "row": {**asdict(self.row), "key": self.row.key}}


def point_name(k: int, primary: int) -> str:
    return "resumed" if k == primary else f"resumed-{k}"


def run_row(row: Row, output: Path) -> Result:
    """Verify one row (and its fault matrix); every figure read back from verification.json."""
    start = time.perf_counter()
    folder = output / row.key.replace("/", "-").replace(" ", "-")
    proc = subprocess.run(verify_command(row, folder), cwd=REPO, capture_output=True, text=True)
    document = json.loads((folder / "verification.json").read_text())
    if document["error"]:
        raise SystemExit(f"{row.key}: verification could not complete: {document['error']}")
    ks = document["interrupt_at"]
    resumes = document["comparison"]["resumes"]
    points = {str(k): _verdict(resumes[point_name(k, ks[0])]) for k in sorted(ks)}
    negative = document["comparison"]["no_rng_resume"]
    result = Result(
        row=row,
        exit_code=proc.returncode,
        points=points,
        negative={**_verdict(negative), "identical_to_full_resume": negative["identical_to_full_resume"]},
    )
    if row.faults:
        matrix = folder.with_name(folder.name + "-faults")
        subprocess.run(verify_command(row, matrix, str(FAULT_POINT), row.faults), cwd=REPO, capture_output=True)
        found = json.loads((matrix / "verification.json").read_text())
        result.faults = {part: fault["detected"] for part, fault in found["faults"].items()}
    result.seconds = round(time.perf_counter() - start, 1)
    return result


def _verdict(entry: dict[str, Any]) -> dict[str, Any]:
    diagnosis = entry["diagnosis"] or {}
    return {"verdict": entry["verdict"], "first_mismatch": entry["first_mismatch"], "lost": diagnosis.get("lost")}


def cell(point: dict[str, Any]) -> str:
    """C, or D with where it first shows: the history field (rows, lr, loss) or the compared key."""
    if point["verdict"] == "concordant":
        return "C"
    where = point["first_mismatch"] or ""
    shown = re.sub(r"\[\d+\]", "", where).split(".")
    return f"D ({shown[1] if shown[0] == 'history' and len(shown) > 1 else shown[0]})"


def table(audit: dict[str, Any], *, brief: bool = False) -> str:
    """The audit as a Markdown table; `brief` keeps the documented path and the fix (the README's)."""
    lines = ["| framework | resume path | k=3 | k=6 (boundary) | k=9 | verifier exit |", "|---|---|---|---|---|---|"]
    for entry in audit["rows"]:
        row = entry["row"]
        if brief and row["variant"] not in BRIEF:
            continue
        name = f"{BY_NAME[row['framework']].title} {audit['versions'][row['framework']]}"
        cells = [cell(entry["points"][k]) for k in ("3", "6", "9")]
        lines.append(f"| {name} | {row['variant']} | {' | '.join(cells)} | {entry['exit_code']} |")
    return "\n".join(lines) + "\n"


def replace_block(path: Path, name: str, content: str) -> None:
    """Rewrite what lies between `<!-- audit:NAME -->` and `<!-- /audit:NAME -->` in a document."""
    try:
        path.write_text(write_between(path.read_text(), "audit", {name: content}))
    except ValueError as err:
        raise SystemExit(f"{path}: {err}") from None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output", type=Path, required=True, help="Folder for every verification; must not exist.")
    parser.add_argument("--write", action="store_true", help="Also write docs/audit.json and the generated tables.")
    parser.add_argument("--only", help="Run only the rows whose key contains this text (no --write).")
    options = parser.parse_args()
    if options.output.exists():
        parser.error(f"--output {options.output}: already exists")
    if options.write and options.only:
        parser.error("--write needs every row: drop --only")
    options.output.mkdir(parents=True)
    start = time.perf_counter()
    versions = {fw.name: importlib.metadata.version(fw.package) for fw in FRAMEWORKS}
    results = []
    for row in (r for r in rows() if not options.only or options.only in r.key):
        result = run_row(row, options.output)
        results.append(result.entry())
        print(f"{row.key}: exit {result.exit_code}, {result.points}, {result.seconds} s", file=sys.stderr)
    audit = {
        "steps": STEPS,
        "interrupt_at": POINTS,
        "fault_point": FAULT_POINT,
        "versions": versions,
        "torch": importlib.metadata.version("torch"),
        "seconds": round(time.perf_counter() - start),
        "causes": {code: asdict(cause) for code, cause in causes.CAUSES.items()},
        "rows": results,
    }
    text = json.dumps(audit, indent=1) + "\n"
    (options.output / "audit.json").write_text(text)
    print(table(audit))
    print(f"{len(results)} rows in {audit['seconds']} s; {options.output / 'audit.json'}")
    if options.write:
        AUDIT_JSON.write_text(text)
        replace_block(REPO / "docs" / "audit.md", "table", table(audit))
        replace_block(REPO / "README.md", "table", table(audit, brief=True))


if __name__ == "__main__":
    main()
