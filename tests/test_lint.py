"""ruff (lint and format) and mypy, as configured in pyproject.toml, pass on the whole tree; the suite stays
schedulable as pyproject.toml asks."""

import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO


@pytest.mark.parametrize(
    "argv",
    [["ruff", "check", "."], ["ruff", "format", "--check", "."], ["mypy"]],
    ids=["ruff-check", "ruff-format", "mypy"],
)
def test_tool_passes(argv):
    proc = subprocess.run([sys.executable, "-m", *argv], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def shares_fixtures(path: Path) -> bool:
    """The module makes fixtures meant to be made once: its own module-scoped ones, or the session-scoped ones of a
    conftest.py of its folder (those of tests/conftest.py, two runs of train.py, are made on each worker)."""
    conftests = [folder / "conftest.py" for folder in path.parents if REPO / "tests" in folder.parents]
    return 'scope="module"' in path.read_text() or any(
        c.is_file() and 'scope="session"' in c.read_text() for c in conftests
    )


def test_every_module_with_a_module_fixture_runs_on_one_worker():
    """Under `--dist loadgroup` a module's tests spread over the workers unless it names a group, and each worker
    would make the module's fixtures (whole verifications) again."""
    assert shares_fixtures(REPO / "tests" / "kit" / "adapters" / "test_lightning.py")  # through its conftest.py
    spread = [
        path.relative_to(REPO).as_posix()
        for path in sorted((REPO / "tests").rglob("test_*.py"))
        if shares_fixtures(path) and "pytest.mark.xdist_group(" not in path.read_text()
    ]
    assert spread == []


def test_the_formatter_formats_nearly_everything():
    """`# fmt: skip` only where a table of values reads better aligned: at most 20 in the whole tree."""
    skips = {
        path.relative_to(REPO).as_posix(): count
        for path in sorted(REPO.rglob("*.py"))
        if not {".venv", "runs", "build"} & set(path.relative_to(REPO).parts)
        and (count := path.read_text().count("# fmt: skip"))
    }
    assert sum(skips.values()) <= 20, skips


def test_no_module_of_the_package_or_the_benchmarks_is_an_outlier_of_over_500_lines():
    """Modules are cut by concept, never by length (docs/architecture.md): a long one is a smell to read again, and
    only a true outlier trips this. A wall of 320 lines made files split along their length mean less."""
    long = {
        path.relative_to(REPO).as_posix(): length
        for root in ("resumeproof", "benchmarks")
        for path in sorted((REPO / root).rglob("*.py"))
        if (length := len(path.read_text().splitlines())) > 500
    }
    assert long == {}
