"""What the adapters' tests share: each example run once, made on first use, and its resumes.

`interrupted` lives for the session so that the modules of this folder share its runs; a test that runs an example is
in the xdist group of its framework ("adapters-lightning", ...; tests/test_lint.py requires a group), so that one worker
makes each framework's runs once and the frameworks spread over both workers.
"""

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from resumeproof.common import manifest
from tests.helpers import FRAMEWORK_EXAMPLES, run_script


@pytest.fixture(scope="session")
def interrupted(tmp_path_factory) -> Callable[[str], Path]:
    """One run of 3 steps per example (mid-epoch), made on first use: framework -> its checkpoint.pt."""
    made = {}

    def get(framework: str) -> Path:
        if framework not in made:
            out = tmp_path_factory.mktemp(framework) / "interrupted"
            proc = run_script(FRAMEWORK_EXAMPLES[framework], "--steps", "3", "--output", out)
            assert proc.returncode == 0, proc.stderr[-2000:]
            made[framework] = out / "checkpoint.pt"
        return made[framework]

    return get


@pytest.fixture
def resumed(tmp_path) -> Callable[..., tuple[subprocess.CompletedProcess, Path]]:
    """(checkpoint, framework, *flags) -> the example resumed from the checkpoint for 2 steps, and its output."""

    def resume(checkpoint: Path, framework: str, *flags: str) -> tuple[subprocess.CompletedProcess, Path]:
        out = tmp_path / "resumed"
        args = ("--steps", "2", "--output", out, "--resume", checkpoint, *flags)
        return run_script(FRAMEWORK_EXAMPLES[framework], *args), out

    return resume


@pytest.fixture
def signed_copy(tmp_path) -> Callable[[Path], Path]:
    """A copy of a checkpoint folder, to be broken and then signed again, as a tampering user would."""

    def copy(source: Path) -> Path:
        folder = tmp_path / "in" / "checkpoint.pt"
        shutil.copytree(source, folder)
        manifest.write(folder)  # its sidecar, naming the same files
        return folder

    return copy
