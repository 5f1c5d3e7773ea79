"""A protocol run around any training loop (a framework's too): flags, the resumed checkpoint, one record per update.

    run = kit.start(parts=("model", "optimizer", "scheduler", "data", "rng-python", "rng-numpy", "rng-torch"))
    ...                                       # resume from run.resume (verified) or run.loaded, then train
    run.record(rows=..., lr=..., loss=...)     # once per update, until run.done()
    run.finish(folder_or_state, state=..., eval=..., lr=next_lr)

A framework saves its checkpoint as a folder (`save_state`, `checkpoint-K/`, a ModelCheckpoint
folder); `finish(folder)` makes that folder `OUTPUT/checkpoint.pt/`, adds the protocol's history
to it (`resumeproof.json`) and fingerprints every file. A plain loop passes its state dict
instead: it becomes the file `OUTPUT/checkpoint.pt`, the history under the key `resumeproof`.
On resume, `start` verifies the checkpoint against its sidecar before anything reads a byte of
it, takes the history back and, for a file, loads it (`run.loaded`). The generators peeked into
`next.rng` are the global ones frameworks save (Python's random, NumPy's legacy global, torch's
default, every CUDA device's where CUDA is available), plus any named with `track`. `meta` records
the omitted parts, the parts `--omit` accepts (`parts`, less any a run `withdraw`s: a scaler where
the framework made no GradScaler), the device and, on CUDA, the GPU (`kit.device_identity`).
"""

import json
import shutil
import sys
import types
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from resumeproof.common import protocol
from resumeproof.common.errors import ResumeproofError, one_line, refuse_existing
from resumeproof.kit import checkpoint, flags
from resumeproof.kit.flags import FlagError, ProtocolArgs
from resumeproof.kit.generators import Generators
from resumeproof.kit.identity import device_identity
from resumeproof.kit.summary import record, write_summary
from resumeproof.kit.torch_setup import configure

HISTORY_FILE = "resumeproof.json"  # inside a directory checkpoint: the protocol's step and history
HISTORY_KEY = "resumeproof"  # inside a file checkpoint: the same


@dataclass
class ProtocolRun:
    args: ProtocolArgs
    start_step: int = 0  # the step the resumed checkpoint was written at
    history: list[dict[str, Any]] = field(default_factory=list)
    generators: Generators = field(default_factory=Generators.global_)
    loaded: dict[str, Any] | None = None  # a resumed file checkpoint, verified and loaded with weights_only
    parts: tuple[str, ...] = ()  # what --omit accepts, less the withdrawn ones: meta.parts
    device: str = "cpu"  # what configure_torch set up: "cpu" or "cuda"

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

    def restores(self, part: str) -> bool:
        """This run resumes and restores `part` (`--omit` does not name it)."""
        return self.resume is not None and part not in self.omit

    @property
    def scratch(self) -> Path:
        """A folder inside the output for the framework's own files while it trains."""
        folder = self.output / "work"
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    def withdraw(self, part: str, why: str) -> None:
        """This run turns out to have no `part` (a framework without a GradScaler): `--omit` naming it is refused
        with `why`, and meta.parts leaves it out."""
        if part in self.omit:
            raise FlagError(f"--omit={part}: {why}; there is nothing to omit")
        self.parts = tuple(p for p in self.parts if p != part)

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
        if self.done():
            raise ResumeproofError(f"an update beyond step {self.target()}: the run must stop there")
        self.history.append(record(len(self.history) + 1, list(rows), lr, loss, **extra))

    def finish(
        self, checkpoint: Path | dict[str, Any], *, state: Any, eval: Any, lr: float, meta: dict | None = None
    ) -> None:
        """Write OUTPUT/checkpoint.pt (from a framework's folder, or a state dict) with the history and its
        fingerprint, then summary.json; `lr` is the one the next update would use."""
        if len(self.history) != self.target():
            raise ResumeproofError(f"the run recorded {len(self.history)} updates, expected {self.target()}")
        final = self.output / protocol.CHECKPOINT
        steps = {"step": len(self.history), "history": self.history}
        if isinstance(checkpoint, dict):
            _save_file(final, checkpoint, steps)
        else:
            _save_folder(final, checkpoint, steps)
        described = {
            protocol.META_OMITTED: sorted(self.omit), **({protocol.META_PARTS: list(self.parts)} if self.parts else {}),
            "device": self.device, "gpu": device_identity(self.device),
        }  # fmt: skip
        write_summary(
            self.output, step=len(self.history), history=self.history, state=state, eval=eval,
            next={"lr": lr, "rng": self.generators.peek()}, meta={**described, **(meta or {})},
        )  # fmt: skip


def start(
    parts: Sequence[str], argv: Sequence[str] | None = None, threads: int = 1, float64: bool = True, device: str = "cpu"
) -> ProtocolRun:
    """Parse the protocol's flags, refuse an existing output, set torch up for `device` ("cpu" or "cuda"), verify
    and read back a resumed checkpoint. From here on a kit error ends the process with one line on stderr."""
    args = flags.parse(argv, parts=parts)
    sys.excepthook = _one_line_errors(sys.excepthook)
    refuse_existing(args.output)
    if float64 or device != "cpu":  # frameworks use TorchDynamo: no stand-in for it (shortcuts=False)
        dtype = torch.float64 if float64 else torch.get_default_dtype()
        device = configure(threads=threads, dtype=dtype, shortcuts=False, device=device).device
    run = ProtocolRun(args, parts=tuple(parts), device=device)
    if args.resume is not None and args.resume.is_dir():
        run.start_step, run.history = _resumed_folder(args.resume)
    elif args.resume is not None:
        run.loaded = checkpoint.load(args.resume)  # its sidecar, then torch.load(weights_only=True)
        run.start_step, run.history = _steps(args.resume, run.loaded.pop(HISTORY_KEY, None))
    args.output.mkdir(parents=True)
    return run


def _save_file(final: Path, state: dict[str, Any], steps: dict[str, Any]) -> None:
    if HISTORY_KEY in state:
        raise ResumeproofError(f"the checkpoint's state may not use the key {HISTORY_KEY!r}: the kit writes it")
    checkpoint.save(final, {**state, HISTORY_KEY: steps})


def _save_folder(final: Path, folder: Path, steps: dict[str, Any]) -> None:
    if not folder.is_dir():
        raise ResumeproofError(f"{folder}: the framework wrote no checkpoint folder there")

    def fill(staged: Path) -> None:
        for item in folder.iterdir():
            shutil.move(str(item), staged / item.name)
        (staged / HISTORY_FILE).write_text(json.dumps(steps, indent=1) + "\n")

    checkpoint.save_directory(final, fill)
    for emptied in (folder, *folder.parents):  # the framework's folder, and the scratch folders that held it
        if emptied == final.parent or any(emptied.iterdir()):
            break
        emptied.rmdir()


def _resumed_folder(path: Path) -> tuple[int, list[dict[str, Any]]]:
    """The step and history a verified checkpoint folder carries."""
    checkpoint.load_directory(path)  # its sidecar, file for file, before anything reads it
    try:
        saved = json.loads((path / HISTORY_FILE).read_text())
    except (OSError, ValueError) as err:
        raise checkpoint.CheckpointError(f"{path}/{HISTORY_FILE}: unreadable ({type(err).__name__}: {err})") from None
    return _steps(path / HISTORY_FILE, saved)


def _steps(where: Path, saved: Any) -> tuple[int, list[dict[str, Any]]]:
    """The step and the history, checked: one record per update."""
    step = saved.get("step") if isinstance(saved, dict) else None
    history = saved.get("history") if isinstance(saved, dict) else None
    if not isinstance(step, int) or not isinstance(history, list) or len(history) != step:
        raise checkpoint.CheckpointError(f"{where}: no protocol history (step and one record per update)")
    return step, history


def _one_line_errors(previous: Any) -> Any:
    """A kit error raised anywhere in the script (a framework's callback included) as one line on stderr."""

    def hook(kind: type[BaseException], err: BaseException, trace: types.TracebackType | None) -> None:
        if isinstance(err, ResumeproofError):
            print(f"{Path(sys.argv[0]).name}: error: {one_line(err)}", file=sys.stderr)
        else:
            previous(kind, err, trace)

    return hook
