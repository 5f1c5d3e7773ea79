"""A checkpoint a framework or a loop of its own wrote, made the protocol's: the history carried inside it.

A framework saves a folder (`save_state`, `checkpoint-K/`, a ModelCheckpoint folder): it becomes
`OUTPUT/checkpoint.pt/`, the protocol's step and history added as `resumeproof.json`, every file
fingerprinted. A loop's state dict becomes the file `OUTPUT/checkpoint.pt`, the history under the
key `resumeproof`. On resume both are verified against their sidecar before anything reads a
byte of them, and the history is taken back.
"""

import json
import shutil
from pathlib import Path
from typing import Any

from resumeproof.common.errors import ResumeproofError
from resumeproof.common.protocol import HISTORY, STEP
from resumeproof.kit import checkpoint

HISTORY_FILE = "resumeproof.json"  # inside a directory checkpoint: the protocol's step and history
HISTORY_KEY = "resumeproof"  # inside a file checkpoint: the same


def save(final: Path, saved: Path | dict[str, Any], history: list[dict[str, Any]]) -> str:
    """`saved` (a framework's folder, or a state dict) at `final` with the history; the sha256 of what is there."""
    steps = {STEP: len(history), HISTORY: history}
    if isinstance(saved, dict):
        return _save_file(final, saved, steps)
    return _save_folder(final, saved, steps)


def read(path: Path) -> tuple[dict[str, Any], int, list[dict[str, Any]]]:
    """A verified checkpoint: a file's state (weights_only; {} for a folder, which its framework reads itself),
    the step it was written at and its history."""
    if path.is_dir():
        checkpoint.load_directory(path)  # its sidecar, file for file, before anything reads it
        try:
            saved = json.loads((path / HISTORY_FILE).read_text())
        except (OSError, ValueError) as err:
            raise checkpoint.CheckpointError(
                f"{path}/{HISTORY_FILE}: unreadable ({type(err).__name__}: {err})"
            ) from None
        return {}, *_steps(path / HISTORY_FILE, saved)
    state = checkpoint.load(path)  # its sidecar, then torch.load(weights_only=True)
    return state, *_steps(path, state.pop(HISTORY_KEY, None))


def _save_file(final: Path, state: dict[str, Any], steps: dict[str, Any]) -> str:
    if HISTORY_KEY in state:
        raise ResumeproofError(f"the checkpoint's state may not use the key {HISTORY_KEY!r}: the kit writes it")
    return checkpoint.save(final, {**state, HISTORY_KEY: steps})


def _save_folder(final: Path, folder: Path, steps: dict[str, Any]) -> str:
    if not folder.is_dir():
        raise ResumeproofError(f"{folder}: the framework wrote no checkpoint folder there")

    def fill(staged: Path) -> None:
        for item in folder.iterdir():
            shutil.move(str(item), staged / item.name)
        (staged / HISTORY_FILE).write_text(json.dumps(steps, indent=1) + "\n")

    digest = checkpoint.save_directory(final, fill)
    for emptied in (folder, *folder.parents):  # the framework's folder, and the scratch folders that held it
        if emptied == final.parent or any(emptied.iterdir()):
            break
        emptied.rmdir()
    return digest


def _steps(where: Path, saved: Any) -> tuple[int, list[dict[str, Any]]]:
    """The step and the history, checked: one record per update."""
    step = saved.get(STEP) if isinstance(saved, dict) else None
    history = saved.get(HISTORY) if isinstance(saved, dict) else None
    if not isinstance(step, int) or not isinstance(history, list) or len(history) != step:
        raise checkpoint.CheckpointError(f"{where}: no protocol history (step and one record per update)")
    return step, history
