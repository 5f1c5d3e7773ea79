"""kit.torch_setup: the two private-API shortcuts run only on tested torch versions and change no number."""

import json
import os
import subprocess
import sys

import pytest

from resumeproof.kit import torch_setup
from tests.helpers import REPO

COMPARED = ("step", "history", "state", "next", "eval")


def train(output, stock: bool, steps: int = 10) -> subprocess.CompletedProcess:
    env = {**os.environ, torch_setup.STOCK_ENV: "1"} if stock else {**os.environ}
    env.pop(torch_setup.STOCK_ENV, None) if not stock else None
    return subprocess.run(
        [sys.executable, "-B", "train.py", "--steps", str(steps), "--output", str(output)],
        cwd=REPO, capture_output=True, text=True, env=env,
    )  # fmt: skip


def test_the_stock_path_and_the_shortcuts_give_bit_identical_runs_and_meta_says_which_ran(continuous_run, tmp_path):
    proc = train(tmp_path / "stock", stock=True)
    assert proc.returncode == 0, proc.stderr
    stock = json.loads((tmp_path / "stock" / "summary.json").read_text())
    fast = json.loads((continuous_run / "summary.json").read_text())
    for key in COMPARED:
        assert stock[key] == fast[key], key  # exact equality, not a tolerance
    assert stock["meta"]["checkpoint_sha256"] == fast["meta"]["checkpoint_sha256"]
    assert (stock["meta"]["torch_setup"], fast["meta"]["torch_setup"]) == (torch_setup.STOCK, torch_setup.SHORTCUTS)


SHOW_DYNAMO = (
    "import runpy, sys\n"
    "sys.argv = ['train.py', '--steps', '2', '--output', sys.argv[1]]\n"
    "try:\n    runpy.run_path('train.py', run_name='__main__')\n"
    "except SystemExit:\n    pass\n"
    "print(sorted(m for m in sys.modules if m.startswith('torch._dynamo')))\n"
)


def test_the_shortcut_path_never_imports_dynamo_and_the_stock_path_does(tmp_path):
    for stock, expected in ((False, "['torch._dynamo']"), (True, "real")):
        env = {**os.environ, torch_setup.STOCK_ENV: "1" if stock else "0"}
        proc = subprocess.run(
            [sys.executable, "-B", "-c", SHOW_DYNAMO, str(tmp_path / f"r{stock}")],
            cwd=REPO, capture_output=True, text=True, env=env,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        modules = proc.stdout.strip()
        if expected == "real":
            assert modules.count("torch._dynamo") > 5, modules  # the real package, with its submodules
        else:
            assert modules == expected  # only the stand-in, none of the real package


@pytest.mark.parametrize(
    ("version", "allowed"), [("2.13.0+cpu", True), ("2.13.1", True), ("2.14.0", False), ("2.12.1", False)]
)
def test_shortcuts_run_only_on_the_torch_releases_the_suite_tested(monkeypatch, version, allowed):
    monkeypatch.setattr(torch_setup.torch, "__version__", version)
    monkeypatch.delenv(torch_setup.STOCK_ENV, raising=False)
    assert torch_setup.shortcuts_allowed() is allowed


def test_the_environment_can_force_the_stock_path(monkeypatch):
    monkeypatch.setenv(torch_setup.STOCK_ENV, "1")
    assert not torch_setup.shortcuts_allowed()
