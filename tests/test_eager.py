"""The TorchDynamo stand-in (resumeproof/eager.py) changes no number."""

import json
import subprocess
import sys

from conftest import REPO

REAL_DYNAMO = (
    "import runpy, sys, torch, torch._dynamo\n"  # the real module first: the stand-in then stays out
    "assert hasattr(torch._dynamo, 'optimize')\n"
    "sys.argv = ['train.py', '--steps', '10', '--output', sys.argv[1]]\n"
    "runpy.run_path('train.py', run_name='__main__')\n"
)


def test_training_with_real_dynamo_is_bit_identical_to_the_stand_in(continuous_run, tmp_path):
    proc = subprocess.run(
        [sys.executable, "-B", "-c", REAL_DYNAMO, str(tmp_path / "real")], cwd=REPO, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    real = json.loads((tmp_path / "real" / "summary.json").read_text())
    fast = json.loads((continuous_run / "summary.json").read_text())
    for key in ("step", "history", "state", "next", "eval"):
        assert real[key] == fast[key], key  # exact equality, not a tolerance
    assert real["meta"]["checkpoint_sha256"] == fast["meta"]["checkpoint_sha256"]


def test_trainer_process_never_imports_dynamo(tmp_path):
    code = (
        "import runpy, sys\n"
        "sys.argv = ['train.py', '--steps', '2', '--output', sys.argv[1]]\n"
        "try:\n    runpy.run_path('train.py', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('torch._dynamo')))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-B", "-c", code, str(tmp_path / "r")], cwd=REPO, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "['torch._dynamo']"  # only the stand-in, none of the real package
