"""The verifier side never imports torch: not at start-up, not through a full verification, not in chaos.

`resumeproof.verify`, `resumeproof.common` and `resumeproof.cli` are the verifier side. Each test
runs the verifier in a fresh interpreter where `import torch` fails (`sys.modules["torch"] = None`);
the trainers it starts are separate processes and import torch as usual.
"""

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO

PACKAGE = REPO / "resumeproof"
VERIFIER_SIDE = sorted([*(PACKAGE / "verify").rglob("*.py"), *(PACKAGE / "common").rglob("*.py"), PACKAGE / "cli.py"])
NO_TORCH = "import runpy, sys\nsys.modules['torch'] = None  # any import of torch now fails\n"


def without_torch(script: str, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    code = NO_TORCH + f"sys.argv = [{script!r}, *sys.argv[1:]]\nrunpy.run_path({script!r}, run_name='__main__')\n"
    return subprocess.run(
        [sys.executable, "-B", "-c", code, *args], cwd=REPO, capture_output=True, text=True, timeout=timeout
    )


def test_a_full_default_verification_passes_with_torch_unimportable_in_the_verifier(tmp_path):
    proc = without_torch("verify_resume.py", "--output", str(tmp_path / "v"))
    assert proc.returncode == 0, proc.stderr
    document = json.loads((tmp_path / "v" / "verification.json").read_text())
    assert document["all_checks_passed"] and document["environment"]["torch"]  # the trainers did use torch


def test_the_chaos_supervisor_runs_with_torch_unimportable(tmp_path):
    args = ("chaos", "--output", str(tmp_path / "c"), "--kills", "2", "--steps", "6", "--seed", "3")
    proc = without_torch("verify_resume.py", *args)
    assert proc.returncode == 0, proc.stderr


def test_flat_inspect_runs_with_torch_unimportable(interrupted_run, tmp_path):
    out = tmp_path / "flat.bin"
    export = [sys.executable, "-B", "-m", "resumeproof", "flat", "export", str(interrupted_run / "checkpoint.pt")]
    subprocess.run([*export, str(out)], cwd=REPO, check=True, capture_output=True)
    code = NO_TORCH + "from resumeproof.cli import main\nmain()\n"
    proc = subprocess.run(
        [sys.executable, "-B", "-c", code, "flat", "inspect", str(out)], cwd=REPO, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert "step 5, 33 parameters" in proc.stdout


@pytest.mark.parametrize("module", [p.relative_to(REPO) for p in VERIFIER_SIDE], ids=str)
def test_every_verifier_side_module_imports_without_torch(module: Path):
    name = ".".join(module.with_suffix("").parts).removesuffix(".__init__")
    code = NO_TORCH + f"import {name}\nprint(sorted(m for m in sys.modules if m.startswith('resumeproof.kit')))\n"
    proc = subprocess.run([sys.executable, "-B", "-c", code], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]", f"{name} loads the trainer kit: {proc.stdout}"


@pytest.mark.parametrize("module", [p.relative_to(REPO) for p in VERIFIER_SIDE], ids=str)
def test_no_verifier_side_module_names_torch_or_the_kit_at_its_top_level(module: Path):
    """A late import inside a function (flat export, --torch-load) is allowed and explicit; a top-level one is not."""
    tree = ast.parse((REPO / module).read_text())
    for node in tree.body:
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        for name in names:
            assert not name.startswith(("torch", "resumeproof.kit")), f"{module}: top-level import of {name}"


def test_verify_help_imports_no_torch_module():
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-B", "verify_resume.py", "--help"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    imported = [line.split("|")[-1].strip() for line in proc.stderr.splitlines() if "|" in line]
    assert not [m for m in imported if m == "torch" or m.startswith(("torch.", "numpy"))]
