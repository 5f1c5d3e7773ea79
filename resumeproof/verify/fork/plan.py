"""What `resumeproof fork` is asked to do, checked once: the checkpoint, the branches with their overrides, the
updates each runs; and the process of each branch, laid out in the output directory (docs/fork.md).

    OUT/branches/NAME/fork-point/CKPT    the branch's own copy of CHECKPOINT (with its sidecar), resumed from
    OUT/branches/NAME/run/               the trainer's --output
    OUT/logs/NAME.log, OUT/observed/NAME.json   its log and the observer's records of its first two updates
"""

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from resumeproof.common.protocol import CONTROL, CONTROL_REPEAT, OUTPUT_FLAG, RESUME_FLAG, RUN_FLAGS, STEPS_FLAG
from resumeproof.verify.plan.trainer import OBSERVED
from resumeproof.verify.run.trajectories import Observe, Trajectory
from resumeproof.verify.settings import SettingsError, parse_train_cmd

BRANCH_FLAG = "--branch"
BRANCH_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")  # a directory name of its own, a word in every report
RESERVED = (CONTROL, CONTROL_REPEAT)
# The fork's own flags: where a branch starts, how far it goes and where it writes are the same for every branch;
# an omitted part or a flat file is a fault, not a configuration.
OWN_FLAGS = RUN_FLAGS
BRANCHES, LOGS, FORK_POINT, RUN = "branches", "logs", "fork-point", "run"
OBSERVED_UPDATES = (1, 2)  # the first update's inputs; the second tells which process-wide generators it drew from


@dataclass(frozen=True, kw_only=True)
class Branch:
    name: str
    overrides: tuple[str, ...]  # appended to the training command; () for the control and its repeat


def parse_branch(text: str) -> Branch:
    """`NAME=OVERRIDES` (`low=--pivot lr=0.01`): the overrides split like a POSIX shell."""
    name, sep, given = text.partition("=")
    if not sep:
        raise SettingsError(BRANCH_FLAG, f"{text!r}: expected NAME=OVERRIDES, e.g. 'low=--pivot lr=0.01'")
    try:
        overrides = tuple(shlex.split(given))
    except ValueError as err:
        raise SettingsError(BRANCH_FLAG, f"{text!r}: {err}") from None
    return Branch(name=name, overrides=overrides)


def _check_branch(b: Branch) -> None:
    said = f"{b.name}={shlex.join(b.overrides)}"
    if not BRANCH_NAME.fullmatch(b.name):
        raise SettingsError(BRANCH_FLAG, f"{said!r}: a name is letters, digits, '_', '.', '-', not {b.name!r}")
    if b.name in RESERVED:
        raise SettingsError(BRANCH_FLAG, f"{said!r}: {b.name!r} is the fork's own branch (without overrides)")
    if not b.overrides:
        raise SettingsError(BRANCH_FLAG, f"{said!r}: no override; the control already runs without any")
    own = [token for token in b.overrides for flag in OWN_FLAGS if token == flag or token.startswith(f"{flag}=")]
    if own:
        raise SettingsError(BRANCH_FLAG, f"{said!r}: {own[0]} is the fork's to set, the same for every branch")


@dataclass(frozen=True, kw_only=True)
class ForkSettings:
    checkpoint: Path  # the resume point every branch starts from; never written to
    branches: tuple[Branch, ...]  # the user's, two or more; the control runs besides them
    steps: int  # N: updates each branch runs from the checkpoint
    output: Path  # absent or empty
    train_cmd: str  # the command every branch runs, its overrides and the protocol's flags appended
    jobs: int = 1  # processes at once
    timeout: float = 600.0  # seconds a branch may run
    plot: bool = True  # write fork.png (matplotlib)

    def __post_init__(self) -> None:
        if self.steps < 1:
            raise SettingsError(STEPS_FLAG, f"{self.steps}: a branch runs at least one update")
        if self.jobs < 1 or not self.timeout > 0:
            raise SettingsError("--jobs" if self.jobs < 1 else "--timeout", "must be > 0")
        if len(self.branches) < 2:
            raise SettingsError(BRANCH_FLAG, f"{len(self.branches)} given: a fork compares two or more branches")
        seen: dict[str, Branch] = {}
        for b in self.branches:
            _check_branch(b)
            if b.name in seen:
                raise SettingsError(BRANCH_FLAG, f"{b.name!r} named twice")
            twin = next((other.name for other in seen.values() if other.overrides == b.overrides), None)
            if twin is not None:
                raise SettingsError(BRANCH_FLAG, f"{b.name!r}: the same overrides as {twin!r}")
            seen[b.name] = b
        parse_train_cmd(self.train_cmd)

    @property
    def control(self) -> Branch:
        return Branch(name=CONTROL, overrides=())

    @property
    def repeat(self) -> Branch:
        return Branch(name=CONTROL_REPEAT, overrides=())

    def folder(self, name: str) -> Path:
        return self.output / BRANCHES / name

    def copy(self, name: str) -> Path:
        """Where a branch's own copy of the checkpoint goes, under the checkpoint's own name."""
        return self.folder(name) / FORK_POINT / self.checkpoint.name

    def trajectory(self, b: Branch) -> Trajectory:
        """The branch's process: the training command, N updates from its copy, its overrides last."""
        run = self.folder(b.name) / RUN
        argv = [*shlex.split(self.train_cmd), STEPS_FLAG, str(self.steps), OUTPUT_FLAG, str(run)]
        argv += [RESUME_FLAG, str(self.copy(b.name)), *b.overrides]
        log = self.output / LOGS / f"{b.name}.log"
        updates = frozenset(n for n in OBSERVED_UPDATES if n <= self.steps)
        return Trajectory(b.name, argv, run, log, observe=Observe(self.output / OBSERVED / b.name, updates))
