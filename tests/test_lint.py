"""ruff (lint and format) and mypy, as configured in pyproject.toml, pass on the whole tree."""

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
