"""The diagnosis corpus: realistic resume bugs, each beside its correct control, verified and scored by cause.

    python -B -m benchmarks.diagnosis [--jobs 2] [--corpus {ours,other,all}] [--only NAME[,NAME...]] [--json OUT]
        [--keep DIR]

Every case is one `verify_resume.py` run of a trainer in `tests/trainers/corpus/` (ours) or
`tests/trainers/corpus_other/` (the other corpus: trainers written in users' styles, most without
resumeproof): a loop with one resume bug chosen by `--bug`, or the same loop resumed correctly.
A case is scored twice:

- its **verdict** is right when the verifier exits as the case expects (0 pass, 1 a comparison
  failed, 2 could not complete);
- its **diagnosis** is *right* when it names exactly the true cause (one of `CASES[i].right`),
  *vague* when it names no part ("unknown", or nothing at all), *wrong* when it names a part that
  is not the cause, or blames lost state for non-determinism or for a negative control without
  power. For a control (true cause "none") a diagnosis that names a part is wrong, and no
  diagnosis at all is right. With `--faults`, every fault run is scored too (right when its
  diagnosis names exactly the part it omitted; a fault that did not run is vague), and the case
  is only as right as its worst fault.

`verification.json` is read into the package's typed result (`resumeproof.verify.report.result`): each
check by its kind and each diagnosis by its rule and parts. Trainers run with PYTHONHASHSEED
unset (two of them depend on the hash seed on purpose). Prints one line per case as it ends,
then per corpus the per-case table and the counts in Markdown, and the counts of both (for
docs/checks.md); `--json` writes them all.

Run from the repository's root. The cases are benchmarks/diagnosis_cases.py (ours) and
benchmarks/diagnosis_other_cases.py (the other corpus), the scoring benchmarks/diagnosis_score.py,
the tables benchmarks/diagnosis_tables.py; this module runs them.
"""

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path

from benchmarks.diagnosis_cases import CASES, OTHER, OURS, Case, select
from benchmarks.diagnosis_other_cases import OTHER_CASES
from benchmarks.diagnosis_score import RIGHT, WRONG, Result, said, score, score_faults, worst
from benchmarks.diagnosis_tables import case_table, corpora_table, count_table, counts
from benchmarks.helpers import REPO
from resumeproof.verify.report.result import Verification

CORPORA = {OURS: CASES, OTHER: OTHER_CASES}
ALL_CASES = CASES + OTHER_CASES
if len({c.name for c in ALL_CASES}) != len(ALL_CASES):
    raise ValueError("two cases of the corpora share a name")


def verifier_env() -> dict[str, str]:
    """The environment trainers inherit: PYTHONHASHSEED unset, so that a hash-order bug shows."""
    return {key: value for key, value in os.environ.items() if key != "PYTHONHASHSEED"}


def run_case(case: Case, output: Path, jobs: int = 1, timeout: float = 600) -> Result:
    """One verification of `case` into `output` (which must not exist), scored."""
    argv = [sys.executable, "-B", "verify_resume.py", "--output", str(output), "--jobs", str(jobs)]
    argv += ["--train-cmd", case.train_cmd(sys.executable), *case.verify]
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=REPO, env=verifier_env(), capture_output=True, text=True, timeout=timeout)
    seconds = time.perf_counter() - start
    report = output / "verification.json"
    doc = json.loads(report.read_text()) if report.is_file() else {}
    v = Verification.from_json(doc) if doc else None
    diagnosis, relevant = score(case, v)
    faults = score_faults(case, v)
    if faults:
        diagnosis = worst(diagnosis, faults)
    lines = [line.strip() for line in proc.stderr.strip().splitlines() if line.strip()]
    if not doc and proc.returncode != 2:  # a traceback's exit 1 is not a comparison that failed
        raise RuntimeError(
            f"{case.name}: the verifier exited {proc.returncode} without verification.json: {lines[-1:]}"
        )
    return Result(
        case=case.name,
        expected_exit=case.exit,
        exit=proc.returncode,
        verdict=RIGHT if proc.returncode == case.exit else WRONG,
        diagnosis=diagnosis,
        said=said(relevant),
        faults=faults,
        reason=lines[-1] if lines else "",
        seconds=round(seconds, 1),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0], allow_abbrev=False)
    parser.add_argument("--jobs", type=int, default=2, help="Verifications at once (default 2).")
    parser.add_argument(
        "--corpus", choices=(OURS, OTHER, "all"), default="all", help="Which corpus to run (default: both)."
    )
    parser.add_argument("--only", help="Comma-separated case names or families (e.g. ema, plateau/fixed).")
    parser.add_argument("--json", type=Path, help="Also write the results and counts as JSON here.")
    parser.add_argument("--keep", type=Path, help="Keep every verification under this directory (must not exist).")
    parser.add_argument("--list", action="store_true", help="Print the cases and exit.")
    options = parser.parse_args(argv)
    chosen = select(options.only, ALL_CASES if options.corpus == "all" else CORPORA[options.corpus])
    if options.list:
        for c in chosen:
            print(f"{c.corpus:5} {c.name:40} exit {c.exit}  cause {c.cause:18} {c.train_cmd()} {shlex.join(c.verify)}")
        return 0
    jobs = max(1, options.jobs)
    per_verifier = max(1, (os.cpu_count() or 2) // jobs)  # trainer processes per verification
    root = options.keep or Path(tempfile.mkdtemp(prefix="diagnosis-corpus-"))
    if options.keep:
        root.mkdir(parents=True)
    cases = {c.name: c for c in ALL_CASES}
    start = time.perf_counter()

    def one(case: Case) -> Result:
        result = run_case(case, root / case.name.replace("/", "--"), per_verifier)
        print(
            f"{case.name:40} exit {result.exit} (expected {case.exit}) verdict {result.verdict:5} "
            f"diagnosis {result.diagnosis:5} [{result.said}] {result.seconds} s",
            file=sys.stderr,
            flush=True,
        )
        return result

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        results = list(pool.map(one, chosen))
    elapsed = time.perf_counter() - start
    groups = {}
    for corpus in CORPORA:
        mine = [r for r in results if cases[r.case].corpus == corpus]
        if mine:
            groups[corpus] = counts(cases, mine)
            print(f"### {corpus} ({len(mine)} cases)\n\n{case_table(cases, mine)}\n\n{count_table(groups[corpus])}\n")
    groups["total"] = counts(cases, results)
    print(f"### total ({len(results)} cases)\n\n{corpora_table(groups)}")
    print(f"\n{len(results)} cases in {elapsed:.0f} s ({jobs} at once); verifications in {root}")
    if options.json:
        document = {
            "results": [{"corpus": cases[r.case].corpus, **asdict(r)} for r in results],
            "counts": {corpus: {name: dict(c) for name, c in g.items()} for corpus, g in groups.items()},
            "seconds": round(elapsed, 1),
        }
        options.json.write_text(json.dumps(document, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
