"""pytest plugin: the `resume_verification` fixture proves a training command resumes exactly, inside a test.

    def test_my_trainer_resumes_exactly(resume_verification):
        result = resume_verification("python -B train.py", interrupt_at="epochs", faults="model,optimizer")
        assert result, result.explanation  # the failed checks, first mismatches, diagnosis, the report

Installed with the package (the `pytest11` entry point), so no conftest is needed. Importing it
costs nothing a session does not already pay: the standard library and pytest only. The
verification runs as `python -m resumeproof verify` in a fresh process, the trajectories as fresh
processes under it, and the output under the test's `tmp_path`; the pytest process never imports
torch. Under pytest-xdist each worker's verification gets `--jobs` = cores / workers, so that
`pytest -n 2` does not run more trainers at once than there are cores.
"""

import itertools
import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest


@dataclass(frozen=True)
class Verification:
    """The outcome of one `resumeproof verify`; true when it passed (exit 0)."""

    exit_code: int
    report: Path  # verification.json
    document: dict[str, Any]  # its content ({} when verification could not start)
    stderr: str

    @property
    def passed(self) -> bool:
        return self.exit_code == 0

    def __bool__(self) -> bool:
        return self.passed

    def __repr__(self) -> str:
        return f"Verification(exit_code={self.exit_code}, report={str(self.report)!r})"

    def assert_passed(self) -> None:
        """Fail the test with the whole explanation (a bare `assert result` shows only its first line)."""
        if not self.passed:
            raise AssertionError(self.explanation)

    @property
    def explanation(self) -> str:
        """What a person needs to act on a failure, in a few lines."""
        if self.passed:
            return f"resumeproof: PASSED ({self.report})"
        doc, lines = self.document, []
        if doc.get("error") or not doc:
            last = self.stderr.strip().splitlines()[-1:] or ["no output"]
            lines.append(f"resumeproof could not complete (exit {self.exit_code}): {doc.get('error') or last[0]}")
        for check in (c for c in doc.get("checks", []) if not c["passed"]):
            lines.append(f"FAILED {check['name']}: first mismatch {check['first_mismatch']}: {check['detail']}")
        for name, entry in _diagnosed(doc):
            found = entry["diagnosis"]
            step = f" at update {found['step']}" if found.get("step") else ""
            lines.append(f"diagnosis {name}: likely lost {found['lost']}{step}: {found['explanation']}")
        if doc.get("blind_to"):
            lines.append(f"the verification is blind to: {', '.join(doc['blind_to'])}")
        lines.append(f"report: {self.report}")
        return "\n".join(lines)


def _diagnosed(doc: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    comparison = doc.get("comparison") or {}
    entries = {**comparison.get("resumes", {}), "resumed-no-rng": comparison.get("no_rng_resume") or {}}
    failing = [(n, e) for n, e in entries.items() if e.get("diagnosis") and n != "resumed-no-rng"]
    negative = entries["resumed-no-rng"]
    if negative.get("diagnosis") and negative.get("identical_to_full_resume"):
        failing.append(("resumed-no-rng", negative))
    return failing


def default_jobs() -> int:
    """The cores this worker may use: all of them, or a share under pytest-xdist."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
    return max(1, (os.cpu_count() or 1) // workers)


def _options(**given: Any) -> list[str]:
    argv = []
    for name, value in given.items():
        flag = "--" + name.replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            argv.append(flag)
        elif isinstance(value, list | tuple):
            argv += [item for v in value for item in (flag, str(v))]
        else:
            argv += [flag, str(value)]
    return argv


@pytest.fixture
def resume_verification(tmp_path: Path) -> Callable[..., Verification]:
    """`resume_verification(train_cmd, **options)` runs `resumeproof verify` and returns a Verification.

    Options are the command's, in Python spelling: steps=, interrupt_at=, faults=, segments=[...],
    allow_unsafe_pickle=[...], check_cadence=True, atol=, timeout=, jobs= (default: cores / xdist
    workers), cwd= (where the command runs; default: the current directory)."""
    runs = itertools.count()

    def run(
        train_cmd: str, *, cwd: str | Path | None = None, extra: Sequence[str] = (), **options: Any
    ) -> Verification:
        output = tmp_path / f"resumeproof-{next(runs)}"
        options.setdefault("jobs", default_jobs())
        argv = [sys.executable, "-B", "-m", "resumeproof", "verify", "--output", str(output)]
        argv += ["--train-cmd", train_cmd, *_options(**options), *extra]
        proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
        report = output / "verification.json"
        document = json.loads(report.read_text()) if report.is_file() else {}
        return Verification(proc.returncode, report, document, proc.stderr)

    return run
