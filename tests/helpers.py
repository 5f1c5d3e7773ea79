"""What many tests share: the repository's paths, fresh-process runners, a schema-checked verification.json."""

import builtins
import functools
import json
import os
import pickle
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.fuzz.pickles import RunsCode  # torch-free: fuzz workers import it too

REPO = Path(__file__).resolve().parent.parent
TRAINERS = Path(__file__).resolve().parent / "trainers"


def code_that_touches(how: str, marker: Path) -> RunsCode:
    if how == "os.system":
        return RunsCode(os.system, f"touch {shlex.quote(str(marker))}")
    return RunsCode(builtins.exec, f"open({str(marker)!r}, 'w').close()")


def rewrite_metadata(folder: Path, change: Callable[[Any], object]) -> None:
    """Change a DCP checkpoint's (trusted, just written) `.metadata` object and write it back with a matching
    sidecar: an attacker who can write the checkpoint can write its sidecar too."""
    from resumeproof.common import manifest
    from resumeproof.common.dcp_files import METADATA

    path = folder / METADATA
    metadata = pickle.loads(path.read_bytes())
    change(metadata)
    path.write_bytes(pickle.dumps(metadata, protocol=4))
    manifest.write(folder)


@functools.cache
def _schema_validator() -> Any:
    import jsonschema

    schema = json.loads((REPO / "docs" / "verification.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def read_verification(path: Path) -> dict[str, Any]:
    """A verification.json, validated against the schema docs/verification.schema.json publishes."""
    document = json.loads(path.read_text())
    errors = sorted(_schema_validator().iter_errors(document), key=lambda e: list(e.path))
    assert not errors, [f"{list(e.path)}: {e.message}" for e in errors[:5]]
    return document


def run_script(script: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """A fresh interpreter, as the verifier runs trainers: `python -B SCRIPT ARGS`."""
    return subprocess.run(
        [sys.executable, "-B", str(script), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
    )


def run_train(*args: str) -> subprocess.CompletedProcess:
    return run_script(REPO / "train.py", *args)


def run_verify(*args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    return run_script(REPO / "verify_resume.py", *args, timeout=timeout)


def trained(tmp_path_factory, name: str, steps: int) -> Path:
    """The directory of one successful `train.py --steps STEPS` run."""
    out = tmp_path_factory.mktemp("session") / name
    proc = run_train("--steps", str(steps), "--output", out)
    assert proc.returncode == 0, proc.stderr
    return out
