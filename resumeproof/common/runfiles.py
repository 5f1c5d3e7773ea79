"""The names of a run directory's files, shared by the trainer that writes them and the verifier that reads them.

Generations are `step_NNNNNN.pt` (the global step, six digits) with their `.sha256`; a write that a
kill interrupted leaves a temporary `.NAME.tmp-PID` beside them.
"""

import re
from pathlib import Path

from resumeproof.common.fingerprint import SIDECAR_SUFFIX
from resumeproof.common.losslog import NAME as LOSS_LOG
from resumeproof.common.protocol import CHECKPOINT, SUMMARY

GENERATION = re.compile(r"step_(\d{6})\.pt")
TEMPORARY = re.compile(r"\..+\.tmp-\d+")  # what fingerprint.write_atomic leaves if killed mid-write
LOCK = ".lock"


def generation(run: Path, step: int) -> Path:
    return run / f"step_{step:06d}.pt"


def generations(run: Path) -> list[tuple[int, Path]]:
    """(step, path) of every generation file present, newest first."""
    found = [(int(m.group(1)), p) for p in run.iterdir() if (m := GENERATION.fullmatch(p.name))]
    return sorted(found, reverse=True)


def is_run_file(name: str) -> bool:
    """Whether a run directory may hold a file of this name; anything else means it is not a run directory."""
    fixed = {CHECKPOINT, CHECKPOINT + SIDECAR_SUFFIX, SUMMARY, LOSS_LOG, LOCK}
    if name in fixed or TEMPORARY.fullmatch(name):
        return True
    return GENERATION.fullmatch(name.removesuffix(SIDECAR_SUFFIX)) is not None
