"""One protocol run, whoever trains it: a plain loop, a framework through its adapter, a torchrun group.

    run = kit.start(parts)                       # a framework's run: flags parsed, a resumed file or folder verified
    run = kit.resume.open_run(args, options)     # the standard layout: found, loaded, validated; nothing restored
    run = par.open_run(args, options)            # the same as one process or as a torchrun group (kit.distributed)
    ...                                          # restore run.resumed (or run.loaded), generators last; then train
    run.enter_loop(step); run.log(record); run.after_update(step, save)   # long runs: loss log, signals, generations
    run.save_final(save); run.write_summary(step=..., history=..., ...)    # checkpoint.pt, then summary.json
    run.record(rows=..., lr=..., loss=...)       # or the run keeps the history, one record per update (frameworks),
    run.finish(folder_or_state, state=..., eval=..., lr=next_lr)          # and writes both at the end

A Run carries the parsed flags, whose parts are what its summary declares (`meta.parts`, with
`meta.omitted`), and its run directory: the strategy that differs between one process (kit.RunDir:
a lock, generations, the loss log, signals) and a torchrun group (kit.distributed's SharedRunDir,
which rank 0 owns, every rank saves into, and which gathers sharded tensors before rank 0 writes
the summary). A part the run turns out not to have (no GradScaler, no other ranks) is withdrawn:
`--omit` naming it is refused, and `meta.parts` leaves it out.

A run `kit.start` opened ends a kit error raised through one of the kit's entry points (a Run's calls, an
adapter's hooks: `entry`) with one line and exit 2, whoever made the call: the script or a framework's
callback. The process's `sys.excepthook` stays the trainer's.
"""

import functools
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar, cast

import torch

from resumeproof.common import protocol
from resumeproof.common.errors import USER_ERRORS, ResumeproofError, error_exit, exit_on_error, refuse_existing
from resumeproof.kit import flags, framework_checkpoint
from resumeproof.kit.flags import ProtocolArgs
from resumeproof.kit.generators import Generators
from resumeproof.kit.identity import device_identity
from resumeproof.kit.layout import PROVENANCE
from resumeproof.kit.rundir import RunDir
from resumeproof.kit.summary import record
from resumeproof.kit.torch_setup import configure

Save = Callable[[Path], str]  # writes a checkpoint at the path given, returns its sha256
Pivoted = dict[str, list[float]]  # what pivot.apply_lr changed: key -> [old, new]; {} for no change
Entry = TypeVar("Entry", bound=Callable[..., Any])


class RunDirectory(Protocol):
    """Where a run writes: kit.RunDir for one process, kit.distributed's SharedRunDir for a group of ranks."""

    @property
    def stopped_by(self) -> str | None: ...

    def enter_loop(self, step: int, **event: object) -> None: ...
    def log(self, record: dict) -> None: ...
    def after_update(self, step: int, save: Save) -> bool: ...
    def finish(self, save: Save) -> str: ...
    def write_summary(self, **document: Any) -> None: ...
    def close(self) -> None: ...


@dataclass(frozen=True, kw_only=True)
class Resumed:
    """A checkpoint found, verified and loaded; restoring it is the trainer's, section by section, generators last."""

    source: Path  # the checkpoint file (or directory) this process continues from
    state: dict[str, Any]  # its dict ({} for a framework's folder); under torchrun as DCP's set_state_dict takes it
    omit: frozenset[str]  # the parts this process leaves unrestored: --omit's (under torchrun, per rank)
    foreign: list[str] = field(default_factory=list)  # the identity differences --override-identity accepted

    def provenance(self, step: int, pivoted: Pivoted) -> list[dict[str, Any]]:
        """Every pivot of the run so far, oldest first: the checkpoint's, then this resume's."""
        return [*self.state.get(PROVENANCE, []), *([{"step": step, "pivot": pivoted}] if pivoted else [])]

    def marks(self, pivoted: Pivoted) -> dict[str, Any]:
        """For the first resumed history record, so that such a run is never concordant with an unchanged one."""
        return {**({"override": self.foreign} if self.foreign else {}), **({"pivot": pivoted} if pivoted else {})}


def entry(call: Entry) -> Entry:
    """A kit entry point: a Run's call, or an adapter's hook a framework makes (the adapter's `run` says which
    run). On a run kit.start opened, a kit error raised through it ends the trainer with one line on stderr and
    exit 2, as exit_on_error would around the whole script; a run built otherwise raises it to its caller."""

    @functools.wraps(call)
    def entered(owner: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return call(owner, *args, **kwargs)
        except USER_ERRORS as err:
            prog = getattr(owner if isinstance(owner, Run) else getattr(owner, "run", None), "prog", None)
            if prog is None:
                raise
            raise error_exit(prog, err) from None

    return cast(Entry, entered)


@dataclass
class Run:
    args: ProtocolArgs  # the flags; args.parts are the declared parts, less the withdrawn ones
    directory: RunDirectory  # one process's RunDir, or a torchrun group's SharedRunDir
    resumed: Resumed | None = None  # what this process continues from
    start_step: int = 0  # the step the resumed checkpoint was written at (runs that record their history)
    history: list[dict[str, Any]] = field(default_factory=list)
    generators: Generators = field(default_factory=Generators.global_)  # peeked into next.rng by `finish`
    device: str = "cpu"  # what configure_torch set up: "cpu" or "cuda"
    prog: str | None = None  # kit.start's runs: the script a kit error at an entry point ends; else the caller's

    @property
    def output(self) -> Path:
        return self.args.output

    @property
    def omit(self) -> frozenset[str]:
        return self.args.omit

    @property
    def parts(self) -> tuple[str, ...]:
        """What --omit accepts, less the withdrawn parts: meta.parts."""
        return self.args.parts

    @property
    def resume(self) -> Path | None:
        """The verified checkpoint (file or folder) this run continues from."""
        return self.resumed.source if self.resumed is not None else None

    @property
    def loaded(self) -> dict[str, Any] | None:
        """A resumed checkpoint file's state (weights_only); None for a fresh run or a folder."""
        return self.resumed.state if self.resumed is not None and not self.resumed.source.is_dir() else None

    def restores(self, part: str) -> bool:
        """This run resumes and restores `part` (`--omit` does not name it)."""
        return self.resumed is not None and part not in self.omit

    @entry
    def withdraw(self, part: str, why: str) -> None:
        """This run turns out to have no `part`: `--omit` naming it is refused with `why`, meta.parts leaves it out."""
        self.args = self.args.withdrawn(part, why)

    @property
    def scratch(self) -> Path:
        """A folder inside the output for the framework's own files while it trains."""
        folder = self.output / "work"
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    # -- the updates ---------------------------------------------------------------------------------------------

    def target(self) -> int:
        """The global step this process must reach (a framework's max_steps)."""
        return self.start_step + self.args.updates_from(self.start_step)

    def done(self) -> bool:
        return len(self.history) >= self.target()

    @entry
    def record(self, *, rows: Sequence[int], lr: float, loss: float, **extra: Any) -> None:
        """One update's record; call it once per optimizer step, in order."""
        if self.done():
            raise ResumeproofError(f"an update beyond step {self.target()}: the run must stop there")
        self.history.append(record(len(self.history) + 1, list(rows), lr, loss, **extra))

    def track(self, **named: Any) -> None:
        """Peek these generators too (a DataLoader's, a sampler's) in `next.rng`."""
        self.generators = Generators(**{**{n: self.generators[n] for n in self.generators.names}, **named})

    @entry
    def enter_loop(self, step: int, **event: object) -> None:
        """Right before the first update: the signal handlers, then loss.jsonl's start line."""
        self.directory.enter_loop(step, **event)

    def log(self, record: dict) -> None:
        self.directory.log(record)

    @entry
    def after_update(self, step: int, save: Save) -> bool:
        """A generation when one is due or asked for (SIGUSR1, SIGTERM); True when the run must stop."""
        return self.directory.after_update(step, save)

    @property
    def stopped_by(self) -> str | None:
        return self.directory.stopped_by

    # -- the end -------------------------------------------------------------------------------------------------

    @entry
    def save_final(self, save: Save) -> str:
        """OUTPUT/checkpoint.pt, written by `save`; its sha256."""
        return self.directory.finish(save)

    @entry
    def write_summary(self, *, step: int, history: list, state: Any, next: dict, eval: Any, meta: Any = None) -> None:
        """summary.json, its meta saying what the flags asked (omitted and declared parts) before the caller's own."""
        described = {**self.args.meta(), **(meta or {})}
        self.directory.write_summary(step=step, history=history, state=state, next=next, eval=eval, meta=described)

    @entry
    def finish(self, saved: Path | dict, *, state: Any, eval: Any, lr: float, meta: dict | None = None) -> None:
        """OUTPUT/checkpoint.pt from a framework's folder or a state dict, the history inside, then summary.json with
        the generators peeked; `lr` is the one the next update would use."""
        if len(self.history) != self.target():
            raise ResumeproofError(f"the run recorded {len(self.history)} updates, expected {self.target()}")
        self.save_final(lambda final: framework_checkpoint.save(final, saved, self.history))
        described = {"device": self.device, "gpu": device_identity(self.device), **(meta or {})}
        upcoming = {protocol.LR: lr, protocol.RNG: self.generators.peek()}
        self.write_summary(
            step=len(self.history), history=self.history, state=state, next=upcoming, eval=eval, meta=described
        )

    def close(self) -> None:
        self.directory.close()


def start(
    parts: Sequence[str], argv: Sequence[str] | None = None, threads: int = 1, float64: bool = True, device: str = "cpu"
) -> Run:
    """Parse the protocol's flags, refuse an existing output, set torch up for `device` ("cpu" or "cuda"), verify
    and read back a resumed checkpoint. A kit error, here or later at the run's entry points, ends the process
    with one line on stderr and exit 2."""
    args = flags.parse(argv, parts=parts)
    prog = Path(sys.argv[0]).name
    with exit_on_error(prog, debug=False):
        return _opened(args, threads, float64, device, prog)


def _opened(args: ProtocolArgs, threads: int, float64: bool, device: str, prog: str) -> Run:
    refuse_existing(args.output)
    if float64 or device != "cpu":  # frameworks use TorchDynamo: no stand-in for it (shortcuts=False)
        dtype = torch.float64 if float64 else torch.get_default_dtype()
        device = configure(threads=threads, dtype=dtype, shortcuts=False, device=device).device
    resumed, step, history = None, 0, list[dict[str, Any]]()
    if args.resume is not None:
        state, step, history = framework_checkpoint.read(args.resume)
        resumed = Resumed(source=args.resume, state=state, omit=args.omit)
    directory = RunDir.create(args.output, args.checkpoint_every, args.keep, args.requeue_on)
    return Run(args, directory, resumed=resumed, start_step=step, history=history, device=device, prog=prog)
