"""An unmodified script's checkpoints in the pattern's own unit (`--checkpoint`): `{step}` the last update the run
completed, `{epoch}` the 0-based index of the last epoch it completed (timm's `checkpoint-0.pth.tar` holds the
state after the first epoch's updates). A script told its length in epochs (`--epochs E`, `{epochs}`) shows its
N and its updates per epoch only when its continuous run ends; `--interrupt-at checkpoints` reads its points off the
files that run wrote.
"""

import re
from dataclasses import replace
from pathlib import Path

from resumeproof.common import observation
from resumeproof.verify.run.trajectories import TrajectoryError
from resumeproof.verify.settings import EPOCH, RUN, STEP, Settings, primary_first

# The updates the observer records of a continuous run whose N is not known before it ends (--epochs): a bound,
# since the observer is told which updates to record; a longer run is refused rather than compared in part.
UNKNOWN_LENGTH = 100_000


def path(s: Settings, run: Path, step: int) -> Path:
    """The checkpoint the pattern names for a run that completed update `step` (in an epoch's unit: the epoch that
    update ended)."""
    filled = s.scripted.checkpoint.replace(RUN, str(run)).replace(STEP, str(step))
    if EPOCH in filled:
        filled = filled.replace(EPOCH, str(step // s.scripted.epoch_updates - 1))
    return Path(filled)


def records(s: Settings) -> str:
    """What the continuous run and its repeat record: every update of N, or of a run whose N is not known yet."""
    return f"1-{s.steps or UNKNOWN_LENGTH}"


def measured(s: Settings, continuous: observation.Observation) -> Settings:
    """The settings of a run told its length in epochs, with N and the updates per epoch the continuous run showed."""
    if not s.epochs or s.steps:
        return s
    n = continuous.completed or 0
    if n > UNKNOWN_LENGTH:
        raise TrajectoryError(
            f"--epochs {s.epochs}: the continuous run ran {n} updates, more than the observer "
            f"records of a run whose length is not known ({UNKNOWN_LENGTH})"
        )
    if n < 2:
        raise TrajectoryError(f"--epochs {s.epochs}: the continuous run ran {n} updates, too few to interrupt")
    if n % s.epochs:
        raise TrajectoryError(
            f"--epochs {s.epochs}: the continuous run ran {n} updates, not the same number in every epoch, so "
            f"{EPOCH} cannot be placed (a sampler whose epochs differ in length: give --steps and {STEP})"
        )
    return replace(s, steps=n, subject=replace(s.scripted, epoch_updates=n // s.epochs))


def ends_epoch(s: Settings, step: int) -> bool:
    """Whether `{epoch}` can name the checkpoint of a run stopped after update `step` (always with `{step}` alone)."""
    return EPOCH not in s.scripted.checkpoint or step % s.scripted.epoch_updates == 0


def at_epoch_ends(s: Settings) -> None:
    """Given points under an `{epoch}` pattern must be where an epoch ends: there is no file of the others."""
    inside = [k for k in s.points if not ends_epoch(s, k)]
    if inside:
        u = s.scripted.epoch_updates
        ends = ", ".join(f"{u * (e + 1)} (epoch {e})" for e in range(min(3, s.epochs - 1))) or "none: raise --epochs"
        raise TrajectoryError(
            f"--interrupt-at {inside[0]}: {EPOCH} in --checkpoint names a checkpoint only where an epoch ends, and "
            f"the epochs here are {u} updates long: k among {ends}{', ...' if s.epochs > 4 else ''}"
        )


def written(s: Settings, run: Path) -> dict[int, Path]:
    """What a run wrote that the pattern matches, by the update after which it was written."""
    pattern = s.scripted.checkpoint.replace(RUN, str(run))
    unit = re.compile(f"({re.escape(STEP)}|{re.escape(EPOCH)})")
    parts = unit.split(pattern)
    found: dict[int, Path] = {}
    glob = "".join("*" if unit.fullmatch(part) else part for part in parts)
    regex = "".join("([0-9]+)" if unit.fullmatch(part) else re.escape(part) for part in parts)
    units = [part for part in parts if unit.fullmatch(part)]
    root, relative = Path(glob).anchor, Path(glob).relative_to(Path(glob).anchor)
    for candidate in Path(root).glob(str(relative)):
        match = re.fullmatch(regex, str(candidate))
        if match:
            steps = {_step(s, u, int(n)) for u, n in zip(units, match.groups(), strict=True)}
            if len(steps) == 1:  # {step} and {epoch} both there must agree
                found[steps.pop()] = candidate
    return dict(sorted(found.items()))


def _step(s: Settings, unit: str, number: int) -> int:
    return (number + 1) * s.scripted.epoch_updates if unit == EPOCH else number


def points(s: Settings, run: Path) -> tuple[int, ...]:
    """`--interrupt-at checkpoints`: every k below N after which the continuous run wrote a checkpoint."""
    found = [k for k in written(s, run) if 1 <= k < s.steps]
    if not found:
        raise TrajectoryError(
            f"--interrupt-at checkpoints: the continuous run wrote nothing that --checkpoint "
            f"{s.scripted.checkpoint!r} matches before its last update {s.steps}{hint(s, run)}"
        )
    return primary_first(found)


def hint(s: Settings, run: Path) -> str:
    """What a run did write, in the pattern's own unit: epochs as epochs, steps as steps."""
    pattern = s.scripted.checkpoint.replace(RUN, str(run))
    if EPOCH in pattern and s.scripted.epoch_updates:
        files = written(s, run)
        said = ", ".join(f"{p.name} after update {k}" for k, p in list(files.items())[:4])
        return f" (it wrote {said}: choose --interrupt-at among those updates, or checkpoints)" if files else ""
    if STEP not in pattern:
        return ""
    head, _, tail = pattern.partition(STEP)
    found = sorted(str(p) for p in Path(head).parent.glob(Path(head).name + "*" + tail.split("/")[0]))
    if not found:
        return ""
    numbered = [re.fullmatch(re.escape(head) + "([0-9]+)" + re.escape(tail.split("/")[0]), f) for f in found]
    zero = any(m is not None and int(m.group(1)) == 0 for m in numbered)
    why = f"; 0 is no update: if they number epochs, write {EPOCH}{'' if s.epochs else ' and give --epochs'}"
    why = why if zero else ""
    return f" (it wrote {', '.join(found[:4])}: choose --interrupt-at among their steps{why})"
