"""ruff (lint and format) and mypy, as configured in pyproject.toml, pass on the whole tree; the suite stays
schedulable as pyproject.toml asks."""

import subprocess
import sys

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


def test_every_module_with_a_module_fixture_runs_on_one_worker():
    """Under `--dist loadgroup` a module's tests spread over the workers unless it names a group, and each worker
    would make the module's fixtures (whole verifications) again."""
    spread = [
        path.relative_to(REPO).as_posix()
        for path in sorted((REPO / "tests").rglob("test_*.py"))
        if 'scope="module"' in (text := path.read_text()) and "pytest.mark.xdist_group(" not in text
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
