"""The GPU benchmark's runs (benchmarks/gpu.py): each verification of the matrix, and what its verification.json
showed; the verify-to-train ratio on the device."""

import json
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.gpu_matrix import FAILED, INCOMPLETE, NOT_DETERMINISTIC, PASSED, RATIO_STEPS, Case, reference_cmd
from benchmarks.helpers import REPO, timed


@dataclass(frozen=True, kw_only=True)
class Fault:
    detected: bool
    caught_by: tuple[str, ...]
    diagnosis: str


@dataclass(frozen=True, kw_only=True)
class Outcome:
    case: Case
    exit_code: int
    seconds: float
    verdict: str  # PASSED, FAILED, NOT_DETERMINISTIC or INCOMPLETE
    detail: str  # why, where it is not a pass: the error, or where the runs first differ
    max_deviation: float | None  # the full resume's, against the continuous run
    faults: dict[str, Fault] = field(default_factory=dict)
    environment: dict[str, Any] = field(default_factory=dict)


def verdict(document: dict[str, Any]) -> str:
    """The verifier's verdict, as its last line says it: an error first, then determinism, then the checks."""
    if document.get("error"):
        return INCOMPLETE
    if document.get("deterministic") is False and not (document.get("determinism") or {}).get("spread"):
        return NOT_DETERMINISTIC  # else judged by its restore and its measured spread: passed or failed
    return PASSED if document.get("all_checks_passed") else FAILED


def outcome(case: Case, document: dict[str, Any] | None, exit_code: int, seconds: float) -> Outcome:
    """What one verification showed; a missing verification.json is a verification that could not complete."""
    if document is None:
        detail = "no verification.json (see its log)"
        return Outcome(
            case=case, exit_code=exit_code, seconds=seconds, verdict=INCOMPLETE, detail=detail, max_deviation=None
        )
    found = verdict(document)
    full = (document.get("comparison") or {}).get("full_resume") or {}
    if found == INCOMPLETE:
        detail = str(document["error"])
    elif found == NOT_DETERMINISTIC:
        d = document.get("determinism") or {}
        detail = f"differs from itself from update {d.get('first_step')} ({d.get('first_mismatch')})"
    elif found == FAILED:
        detail = f"first mismatch {full.get('first_mismatch')}; blind to {document.get('blind_to') or 'nothing'}"
    else:
        detail = ""
    faults = {part: _fault(f) for part, f in (document.get("faults") or {}).items()}
    return Outcome(
        case=case,
        exit_code=exit_code,
        seconds=seconds,
        verdict=found,
        detail=detail,
        max_deviation=full.get("max_deviation"),
        faults=faults,
        environment=document.get("environment") or {},
    )


def _fault(entry: dict[str, Any]) -> Fault:
    diagnosis = (entry.get("diagnosis") or {}).get("lost") or "unknown"
    return Fault(
        detected=bool(entry.get("detected")), caught_by=tuple(entry.get("caught_by") or ()), diagnosis=diagnosis
    )


def run_case(case: Case, output: Path, jobs: int, env: dict[str, str] | None) -> Outcome:
    """One verification, its output in output/KEY.log; the verifier and its trainers run in the repository."""
    started = time.perf_counter()
    with open(output / f"{case.key}.log", "w") as log:
        proc = subprocess.run(case.argv(output, jobs), cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    seconds = time.perf_counter() - started
    report = output / case.key / "verification.json"
    return outcome(case, json.loads(report.read_text()) if report.is_file() else None, proc.returncode, seconds)


def run_matrix(
    cases: Sequence[Case],
    output: Path,
    jobs: int,
    parallel: int,
    env: dict[str, str],
    say: Callable[[str], None] = print,
) -> list[Outcome]:
    def one(case: Case) -> Outcome:
        found = run_case(case, output, jobs, env)
        say(f"  {case.key}: {found.verdict} (exit {found.exit_code}) in {found.seconds:.1f} s")
        return found

    with ThreadPoolExecutor(max_workers=parallel) as pool:
        return list(pool.map(one, cases))


@dataclass(frozen=True, kw_only=True)
class Ratio:
    train: list[float]  # seconds of one `--steps 10` trainer process, per repeat
    verify: list[float]  # seconds of one default verification, per repeat

    @property
    def value(self) -> float:
        return statistics.median(self.verify) / statistics.median(self.train)


def measure_ratio(device: str, output: Path, repeats: int, env: dict[str, str]) -> Ratio:
    """benchmarks/verify_ratio.py's measurement on this device: train and verify alternately, medians."""
    train_cmd = reference_cmd(device, "float64")
    train, verify = [], []
    for i in range(repeats):
        run = [*shlex.split(train_cmd), "--steps", str(RATIO_STEPS), "--output", str(output / f"ratio-train-{i}")]
        train.append(timed(run, env))
        check = [sys.executable, "-B", "verify_resume.py", "--output", str(output / f"ratio-verify-{i}")]
        verify.append(timed([*check, "--train-cmd", train_cmd], env))
    return Ratio(train=train, verify=verify)
