"""A protocol run around a framework's own training loop: flags, the resumed checkpoint, one record per update.

    run = kit.start(parts=("model", "optimizer", "scheduler", "data", "rng-python", "rng-numpy", "rng-torch"))
    ...                                    # the framework resumes from run.resume (verified) and trains
    run.record(rows=..., lr=..., loss=...)  # once per update, until run.done()
    run.finish(folder, state=..., eval=..., lr=next_lr)

A framework saves its checkpoint as a folder (`save_state`, `checkpoint-K/`, a `.ckpt` in a
ModelCheckpoint folder); `finish` makes that folder `OUTPUT/checkpoint.pt/`, adds the protocol's
history to it (`resumeproof.json`), fingerprints every file and writes `summary.json`. On resume,
`start` verifies the folder against its sidecar before the framework reads a byte of it, and
takes the history back. The generators peeked into `next.rng` are the global ones frameworks
save (Python's random, NumPy's legacy global, torch's default), plus any named with `track`.
"""

import json
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from resumeproof.common import protocol
from resumeproof.common.errors import ResumeproofError, refuse_existing
from resumeproof.kit import checkpoint, flags
from resumeproof.kit.flags import ProtocolArgs
from resumeproof.kit.generators import Generators
from resumeproof.kit.summary import record, write_summary
from resumeproof.kit.torch_setup import configure

HISTORY_FILE = "resumeproof.json"  # inside a directory checkpoint: the protocol's step and history


@dataclass
class ProtocolRun:
    args: ProtocolArgs
    start_step: int = 0  # the step the resumed checkpoint was written at
    history: list[dict[str, Any]] = field(default_factory=list)
    generators: Generators = field(default_factory=Generators.global_)

    @property
    def output(self) -> Path:
        return self.args.output

    @property
    def resume(self) -> Path | None:
        """The verified checkpoint (file or folder) this run continues from."""
        return self.args.resume

    @property
    def omit(self) -> frozenset[str]:
        return self.args.omit

    @property
    def scratch(self) -> Path:
        """A folder inside the output for the framework's own files while it trains."""
        folder = self.output / "work"
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    def target(self) -> int:
        """The global step this process must reach (a framework's max_steps)."""
        return self.start_step + self.args.updates_from(self.start_step)

    def done(self) -> bool:
        return len(self.history) >= self.target()

    def track(self, **named: Any) -> None:
        """Peek these generators too (a DataLoader's, a sampler's) in `next.rng`."""
        self.generators = Generators(**{**{n: self.generators[n] for n in self.generators.names}, **named})

    def record(self, *, rows: Sequence[int], lr: float, loss: float, **extra: Any) -> None:
        """One update's record; call it once per optimizer step, in order."""
        self.history.append(record(len(self.history) + 1, list(rows), lr, loss, **extra))

    def finish(self, folder: Path, *, state: Any, eval: Any, lr: float, meta: dict | None = None) -> None:
        """Make `folder` (the framework's checkpoint) OUTPUT/checkpoint.pt with the history and its
        fingerprint, then write summary.json; `lr` is the one the next update would use."""
        if len(self.history) != self.target():
            raise ResumeproofError(f"the run recorded {len(self.history)} updates, expected {self.target()}")
        final = self.output / protocol.CHECKPOINT
        steps = {"step": len(self.history), "history": self.history}

        def fill(staged: Path) -> None:
            for item in folder.iterdir():
                shutil.move(str(item), staged / item.name)
            (staged / HISTORY_FILE).write_text(json.dumps(steps, indent=1) + "\n")

        checkpoint.save_directory(final, fill)
        write_summary(
            self.output, step=len(self.history), history=self.history, state=state, eval=eval,
            next={"lr": lr, "rng": self.generators.peek()}, meta={"omitted": sorted(self.omit), **(meta or {})},
        )  # fmt: skip


def start(
    parts: Sequence[str], argv: Sequence[str] | None = None, threads: int = 1, float64: bool = True
) -> ProtocolRun:
    """Parse the protocol's flags, refuse an existing output, verify and read back a resumed checkpoint."""
    args = flags.parse(argv, parts=parts)
    refuse_existing(args.output)
    if float64:
        configure(threads=threads)
    run = ProtocolRun(args)
    if args.resume is not None:
        run.start_step, run.history = _resumed(args.resume)
    args.output.mkdir(parents=True)
    return run


def _resumed(path: Path) -> tuple[int, list[dict[str, Any]]]:
    """The step and history a verified checkpoint folder carries."""
    checkpoint.load_directory(path)  # its sidecar, file for file, before anything reads it
    try:
        saved = json.loads((path / HISTORY_FILE).read_text())
        step, history = saved["step"], saved["history"]
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise checkpoint.CheckpointError(f"{path}/{HISTORY_FILE}: unreadable ({type(err).__name__}: {err})") from None
    if not isinstance(history, list) or len(history) != step:
        raise checkpoint.CheckpointError(f"{path}/{HISTORY_FILE}: {len(history)} records for step {step}")
    return step, history
