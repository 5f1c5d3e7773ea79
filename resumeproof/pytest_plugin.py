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
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from resumeproof.verify.report.result import Verification


@dataclass(frozen=True)
class Outcome:
    """One `resumeproof verify` run from a test; true when it passed (exit 0)."""

    exit_code: int
    report: Path  # verification.json
    document: dict[str, Any]  # its content as JSON ({} when verification could not start)
    stderr: str

    @property
    def verification(self) -> "Verification | None":
        """The same document as the typed result every report renders (docs/verification-json.md)."""
        from resumeproof.verify.report.result import Verification  # late: a session that never verifies never loads it

        return Verification.from_json(self.document) if self.document else None

    @property
    def passed(self) -> bool:
        return self.exit_code == 0

    def __bool__(self) -> bool:
        return self.passed

    def __repr__(self) -> str:
        return f"Outcome(exit_code={self.exit_code}, report={str(self.report)!r})"

    @property
    def explanation(self) -> str:
        """What a person needs to act on a failure, in a few lines."""
        if self.passed:
            return f"resumeproof: PASSED ({self.report})"
        v, lines = self.verification, []
        if v is None:
            last = self.stderr.strip().splitlines()[-1:] or ["no output"]
            return f"resumeproof could not complete (exit {self.exit_code}): {last[0]}\nreport: {self.report}"
        from resumeproof.verify.report.verdict import failure  # late, as above

        lines.append(f"resumeproof {v.verdict.line}")  # the line the terminal report ends with
        for check in v.failed():
            first = f": first mismatch {check.first_mismatch}: {check.detail}" if check.first_mismatch else ""
            lines.append(f"failed: {failure(check, v)}{first}")
            if check.diagnosis:
                lines.append(f"diagnosis {check.id.trajectory or check.name}: {check.diagnosis.sentence()}")
        lines.append(f"report: {self.report}")
        return "\n".join(lines)


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
def resume_verification(tmp_path: Path) -> Callable[..., Outcome]:
    """`resume_verification(train_cmd, **options)` runs `resumeproof verify` and returns its Outcome.

    Options are the command's, in Python spelling: steps=, interrupt_at=, faults=, segments=[...],
    allow_unsafe_pickle=[...], check_cadence=True, require_deterministic=True, atol=, timeout=, jobs= (default:
    cores / xdist workers), cwd= (where the command runs; default: the current directory); for a script as it is,
    observe=True with resume_cmd=, checkpoint=, and preset= or stop= (docs/observe.md); on a cluster, launcher="slurm"
    or "ray" with its slurm_*= or ray_*= options, and preempt="signal" or "requeue" (docs/cluster.md)."""
    runs = itertools.count()

    def run(train_cmd: str, *, cwd: str | Path | None = None, extra: Sequence[str] = (), **options: Any) -> Outcome:
        output = tmp_path / f"resumeproof-{next(runs)}"
        options.setdefault("jobs", default_jobs())
        argv = [sys.executable, "-B", "-m", "resumeproof", "verify", "--output", str(output)]
        argv += ["--train-cmd", train_cmd, *_options(**options), *extra]
        proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
        report = output / "verification.json"
        document = json.loads(report.read_text()) if report.is_file() else {}
        return Outcome(proc.returncode, report, document, proc.stderr)

    return run
