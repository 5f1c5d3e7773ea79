"""Where a run on the standard layout continues from: a fresh run, an explicit `--resume`, or `--resume auto` in place.

    options = resume.Options(training=t, config=config, identity=identity, rows_per_step=batch, warn=warn)
    run = resume.open_run(args, options)   # a kit.Run: found, loaded and validated; nothing restored yet
    if run.resumed is not None:
        ...                                # the trainer restores run.resumed.state, generators last

A refused checkpoint creates nothing: the run directory is created only after the load passed. Under
torchrun, kit.distributed's Group does the same with DCP directories (`par.open_run(args, options)`).
A declared pivot is not held against the checkpoint; the trainer applies it after its restore, and
both a pivot and an accepted foreign checkpoint become `marks` for the first resumed history record,
where the comparison sees them.
"""

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from resumeproof.common.errors import ResumeproofError
from resumeproof.common.protocol import PROGRESS
from resumeproof.kit import checkpoint, layout, pivot
from resumeproof.kit.flags import ProtocolArgs
from resumeproof.kit.run import Resumed, Run
from resumeproof.kit.rundir import RunDir

__all__ = ["Options", "Resumed", "open_run"]


@dataclass(frozen=True, kw_only=True)
class Options:
    """What a checkpoint must match for this run to continue from it, beyond the protocol's flags."""

    training: layout.Training  # freshly built: shapes, constants and generator kinds a checkpoint must match
    config: dict[str, Any]  # the experiment: a checkpoint of another one is refused
    identity: dict[str, str]  # code and data sha256: a checkpoint of others is refused unless accept_foreign
    rows_per_step: int  # how far the data position moves per update
    warn: Callable[[str], None]  # what `--resume auto` skipped or removed on the way
    accept_foreign: bool = False  # --override-identity: resume other code, data or versions, and record it
    pivot: dict[str, float] = field(default_factory=dict)  # --pivot: the keys it changes are not held against it

    def expected(self) -> layout.Expected:
        """Read off the freshly built objects: call it before anything is loaded into them."""
        keys = pivot.changed_keys(self.pivot)
        return layout.Expected.of(self.training, self.config, self.identity, self.rows_per_step, keys)

    def nothing_found(self) -> None:
        """A run that starts from scratch: refused if a pivot was declared, since a pivot changes a resumed run."""
        if self.pivot:
            raise ResumeproofError("--pivot changes a resumed run; there is nothing to resume here")


def open_run(args: ProtocolArgs, options: Options, read: Callable[[Path], dict[str, Any]] = checkpoint.load) -> Run:
    """Find and validate what to continue from (nothing is restored), then open the run directory. `read`
    loads a checkpoint in the layout's form, checked: a file by default (kit.distributed's Single also
    reads a DCP directory)."""
    expected = options.expected()

    def load(path: Path) -> Resumed:
        state = read(path)
        foreign = layout.validate(path, state, expected, options.accept_foreign)
        return Resumed(source=path, state=state, omit=args.omit, foreign=foreign)

    if args.resume_auto:
        step_of, every, keep = (lambda r: r.state[PROGRESS]["step"]), args.checkpoint_every, args.keep
        run_dir, found = RunDir.in_place(args.output, load, step_of, options.warn, every, keep, args.requeue_on)
        resumed = found[1] if found else None
    else:
        resumed = load(args.resume) if args.resume else None
    if resumed is None:
        options.nothing_found()
    if not args.resume_auto:
        run_dir = RunDir.create(args.output, args.checkpoint_every, args.keep, args.requeue_on)
    return Run(args, run_dir, resumed=resumed)
