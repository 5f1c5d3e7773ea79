"""What several benchmarks share: the repository, a timed command, a chaos run, figures written between markers.

Every benchmark runs as a module from the repository's root (`python -B -m benchmarks.NAME`), which is
what makes this module, the package and the tests' helpers importable without touching sys.path.
"""

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
PY = [sys.executable, "-B"]
TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone"]


def timed(argv: list[str], env: dict[str, str] | None = None) -> float:
    """Wall seconds of one command run from the repository; a failure ends the benchmark with its stderr."""
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, env=env)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"{' '.join(argv)} exited {proc.returncode}:\n{proc.stderr}")
    return elapsed


def run_chaos(extra_args: list[str]) -> tuple[int, float, dict[str, Any]]:
    """One `verify_resume.py chaos` with these arguments: its exit status, its wall seconds, its verification.json."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "chaos"
        argv = [*PY, "verify_resume.py", "chaos", "--output", str(out), *extra_args]
        start = time.perf_counter()
        proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True)
        elapsed = time.perf_counter() - start
        report = out / "verification.json"
        if not report.is_file():
            sys.exit(f"exit {proc.returncode}, no report:\n{proc.stderr[-3000:]}")
        return proc.returncode, elapsed, json.loads(report.read_text())


def print_checks(doc: dict[str, Any]) -> None:
    """A chaos run's checks (verification.json's list, as a verification's), one line each."""
    for check in doc["checks"]:
        print(f"  {'PASS' if check['passed'] else 'FAIL'}  {check['name']}")


def write_between(text: str, tag: str, replacements: dict[str, str]) -> str:
    """`text` with what lies between each `<!-- TAG:NAME -->` line and its `<!-- /TAG:NAME -->` replaced."""
    for name, body in replacements.items():
        start, end = f"<!-- {tag}:{name} -->\n", f"<!-- /{tag}:{name} -->"
        if text.count(start) != 1 or text.count(end) != 1 or text.index(start) > text.index(end):
            raise ValueError(f"the markers {start.strip()} ... {end} must appear once each, in that order")
        head, rest = text.split(start)
        tail = rest.split(end)[1]
        text = head + start + (body if body.endswith("\n") else body + "\n") + end + tail
    return text
