"""`resumeproof verify --observe`: verify a training script as it is, from the observer's records alone.

No protocol flag is appended and no summary.json is read. The commands carry placeholders the verifier fills for
each trajectory: `{run}` a directory of its own that does not exist yet (with --resume-from-run, a resume's is a
copy of the interrupted run's, made as it starts: verify/run/inputs.py), `{steps}` the continuous run's N (the
same in every process: the run length decides schedules, so the observer stops the interrupted run, never its
flags), `{checkpoint}` the interrupted run's checkpoint, from `--checkpoint` (`{run}` there is the interrupted
run's directory, `{step}` its last completed update). Every process is watched (resumeproof/observe/): the
continuous run and its repeat record every update, an interrupted run is ended by the observer after update k,
every resume records every update it runs, the negative control has the generators' setters blocked, and each
fault one part's `load_state_dict`. verify/judge/records/exact.py compares the records.
"""

import shlex
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from resumeproof.common import observation
from resumeproof.common.protocol import (
    CONTINUOUS,
    FAULT_PREFIX,
    PREEMPTED,
    REPEAT,
    RESUMED_NO_RNG,
    CheckId,
    CheckKind,
)
from resumeproof.verify.plan import checkpoints
from resumeproof.verify.plan.points import Epochs
from resumeproof.verify.plan.trainer import OBSERVED, point_names
from resumeproof.verify.run import inputs
from resumeproof.verify.run.launch import Preempt
from resumeproof.verify.run.trajectories import Observe, Trajectory, TrajectoryError
from resumeproof.verify.settings import (
    CHECKPOINT,
    CHECKPOINTS,
    EPOCH,
    EPOCHS,
    RUN,
    RUN_EPOCHS,
    STEPS,
    Settings,
    SettingsError,
    primary_first,
)
from resumeproof.verify.vocabulary.expectation import Expect, Expectation


@dataclass(frozen=True)
class Preset:
    """The flags a framework's scripts take, so that `--train-cmd` can be the script as it is run."""

    train: str  # appended to --train-cmd
    resume: str  # appended to the resume command (--resume-cmd, else --train-cmd), after `train`
    checkpoint: str  # --checkpoint, unless given


PRESETS = {
    # `TrainingArguments` through HfArgumentParser; the Trainer writes `checkpoint-N` every `save_steps`.
    "transformers": Preset(
        train="--max_steps {steps} --save_steps 1 --output_dir {run}",
        resume="--resume_from_checkpoint {checkpoint}",
        checkpoint="{run}/checkpoint-{step}",
    ),
    # `LightningCLI ... fit`: a ModelCheckpoint appended to the script's callbacks keeps every step's checkpoint,
    # named by Lightning's global step (`step=3.ckpt`); the resume passes it to `fit --ckpt_path`.
    "lightning": Preset(
        train=(
            "--trainer.max_steps {steps} --trainer.default_root_dir {run} --trainer.callbacks+=ModelCheckpoint"
            " --trainer.callbacks.dirpath={run} --trainer.callbacks.filename={step}"
            " --trainer.callbacks.every_n_train_steps=1 --trainer.callbacks.save_top_k=-1"
        ),
        resume="--ckpt_path {checkpoint}",
        checkpoint="{run}/step={step}.ckpt",
    ),
}


def with_preset(
    name: str | None, train_cmd: str, resume_cmd: str | None, checkpoint: str | None
) -> tuple[str, str | None, str | None]:
    """The commands and pattern a preset fills in (the user's own --checkpoint wins)."""
    if name is None:
        return train_cmd, resume_cmd, checkpoint
    preset = PRESETS[name]
    train = f"{train_cmd} {preset.train}"
    resume = f"{resume_cmd or train_cmd} {preset.train} {preset.resume}"
    return train, resume, checkpoint or preset.checkpoint


def command(template: str, run: Path, steps: int, checkpoint: Path | None = None, epochs: int = 0) -> list[str]:
    """A command line with its placeholders filled, token by token (a path with spaces stays one argument)."""
    filled = {RUN: str(run), STEPS: str(steps), CHECKPOINT: str(checkpoint or ""), RUN_EPOCHS: str(epochs)}
    out = []
    for token in shlex.split(template):
        for placeholder, value in filled.items():
            token = token.replace(placeholder, value)
        out.append(token)
    return out


def checkpoint_of(s: Settings, run: Path, step: int) -> Path:
    return checkpoints.path(s, run, step)


Observed = dict[int | None, observation.Observation]  # one record per rank (None: a process without a launcher)


def build(s: Settings) -> list[Trajectory]:
    """The continuous run, its repeat (determinism before diagnosis), and one interrupted run per point; the
    resumes follow each interrupted run once its checkpoint is known (`resumes`). With --preempt, the job Slurm
    preempts (`preempted`)."""
    return [
        reference(s, CONTINUOUS),
        reference(s, REPEAT),
        *interrupted(s),
        *([preempted(s)] if s.launch.preempt else []),
    ]


def preempted(s: Settings) -> Trajectory:
    """--preempt: --train-cmd as the job a user submits, in a `{run}` of its own that it must resume from by itself
    once Slurm restarts it. The observer records every update of each start (a restart into a file of its own) and
    holds the first start right after update k while Slurm preempts it; where the restart went on from is read off
    its first update (verify/judge/preemption.py), and every update after it is held against the continuous run."""
    base = s.output / OBSERVED / PREEMPTED
    watch = Observe(base, f"1-{s.steps}", values=s.atol > 0, pause=s.primary)
    job = Preempt(s.launch.preempt or "", s.primary, s.launch.slurm_signal, held=base)
    check = CheckId(kind=CheckKind.RESUME, trajectory=PREEMPTED)
    name = f"{PREEMPTED} (by {s.launch.preempt} after update {s.primary}, restarted by Slurm): concordant"
    expect = Expectation(kind=Expect.CONCORDANT, id=check, name=name, resumed_at=s.primary)
    return replace(_trajectory(s, PREEMPTED, s.train_cmd, watch), preempt=job, planned=expect)


def reference(s: Settings, name: str) -> Trajectory:
    """The continuous run, or a repeat of it (protocol.REPEATS), every update recorded."""
    watch = Observe(s.output / OBSERVED / name, checkpoints.records(s), values=s.atol > 0)
    t = _trajectory(s, name, s.train_cmd, watch)
    if name == CONTINUOUS:
        return t
    repeat = CheckId(kind=CheckKind.DETERMINISM, trajectory=name)
    return replace(t, planned=Expectation(kind=Expect.REPEAT, id=repeat, name=f"{name}: the continuous run again"))


def interrupted(s: Settings) -> list[Trajectory]:
    """One interrupted run per point (none until the points, and N, are read off the continuous run)."""
    plan = []
    for k in s.points if not s.deferred else ():
        name = point_names(k, k == s.primary)[0]
        # its first update too: which module attributes training changes (judge/records/first_update.changing)
        watch = Observe(s.output / OBSERVED / name, f"1,{k}-{k + 1}", stop=(s.scripted.stop, k))
        plan.append(_trajectory(s, name, s.train_cmd, watch))
    return plan


def resumes(s: Settings, interrupted: Trajectory, k: int) -> list[Trajectory]:
    """The resumes from an interrupted run that stopped after update `k`, each with what the judge holds it to
    (verify/judge/records/script.py): the full resume concordant, and from the primary point the negative control (the
    generators' setters blocked) and one fault per part (its restore blocked) divergent. With --resume-from-run each
    runs in a copy of the interrupted run's folder, made as it starts, and `{checkpoint}` names the checkpoint in
    that copy."""
    point = next(p for p in s.points if point_names(p, p == s.primary)[0] == interrupted.name)
    resumed = point_names(point, point == s.primary)[1]
    runs: list[tuple[CheckId, tuple[str, ...]]] = [(CheckId(kind=CheckKind.RESUME, trajectory=resumed), ())]
    if point == s.primary:
        runs += [(CheckId(kind=CheckKind.NEGATIVE_CONTROL, trajectory=RESUMED_NO_RNG), (observation.RNG_SETTERS,))]
        runs += [(CheckId(kind=CheckKind.FAULT, trajectory=f"{FAULT_PREFIX}{p}", part=p), (p,)) for p in s.faults]
    out = []
    for check, block in runs:
        name = check.trajectory or ""
        watch = Observe(s.output / OBSERVED / name, f"1-{max(1, s.steps - k)}", block=block, values=s.atol > 0)
        checkpoint = checkpoint_of(s, s.output / name if s.scripted.resume_from_run else interrupted.output, k)
        t = _trajectory(s, name, s.resume_template, watch, checkpoint, (interrupted.name,))
        kind = Expect.CONCORDANT if check.kind is CheckKind.RESUME else Expect.DIVERGENT
        expect = Expectation(kind=kind, id=check, name=f"{name}: {kind.value}", part=check.part, resumed_at=k)
        copy_of = interrupted.output if s.scripted.resume_from_run else None
        out.append(replace(t, starts_from=checkpoint, copy_of=copy_of, planned=expect))
    return out


def expand(s: Settings, done: Trajectory) -> list[Trajectory]:
    """What a finished process adds to the plan: an interrupted run's resumes, once it stopped."""
    if done.observe is None or done.observe.stop is None:
        return []
    return resumes(s, done, stopped(observation.read_all(done.observe.record)))


def inferred(s: Settings, trajectories: Sequence[Trajectory]) -> tuple[Settings, list[Trajectory], str | None]:
    """The settings with what is read off the continuous run, and the interrupted runs they ask for: with --epochs
    its N and updates per epoch; the points of `--interrupt-at epochs` or `checkpoints` (given points: that {epoch}
    can name them). Where they cannot be read, why, with what was (N, the verification's length)."""
    continuous = trajectories[0]
    assert continuous.observe is not None
    seen = observation.read_all(continuous.observe.record)
    try:
        s = checkpoints.measured(s, first_rank(seen))
        if s.read_off is CHECKPOINTS:
            s = s.with_points(checkpoints.points(s, continuous.output))
        elif s.read_off is EPOCHS:
            s = s.with_points(epoch_points(s, seen))
        checkpoints.at_epoch_ends(s)
    except (TrajectoryError, SettingsError) as err:
        return s, [], str(err)
    return s, interrupted(s), None


def _trajectory(
    s: Settings,
    name: str,
    template: str,
    watch: Observe,
    checkpoint: Path | None = None,
    after: Sequence[str] = (),
) -> Trajectory:
    argv = command(template, s.output / name, s.steps, checkpoint, s.epochs)
    log = s.output / "logs" / f"{name}.log"
    return Trajectory(name, argv, s.output / name, log, tuple(after), observe=watch)


def accept(s: Settings, t: Trajectory) -> None:
    """What a finished process must have left: the observer's records of it, whole; an interrupted run stopped
    by the observer after update k, and its checkpoint where `--checkpoint` says."""
    assert t.observe is not None
    seen = observation.read_all(t.observe.record)
    if not seen:
        raise TrajectoryError(
            "the observer recorded nothing: the process never stepped a torch optimizer, or its interpreter ignored "
            "PYTHONPATH (python -I or -E)"
        )
    failed = next((o.failed for o in seen.values() if o.failed), None)
    if failed:
        raise TrajectoryError(f"the observer could not watch it: {failed}")
    first = seen[min(seen, key=lambda r: -1 if r is None else r)]
    if t.observe.stop is not None:
        k = t.observe.stop[1]
        if first.stopped is None:
            raise TrajectoryError(
                f"it ended after {first.completed} updates, before the observer could stop it after {k}"
            )
        step = stopped_at(first)
        if not checkpoints.ends_epoch(s, step):
            raise TrajectoryError(f"it stopped after update {step}, inside an epoch: {EPOCH} names no checkpoint of it")
        found = checkpoint_of(s, t.output, step)
        if not found.exists():
            raise TrajectoryError(f"no checkpoint at {found} after update {step}{checkpoints.hint(s, t.output)}")
        t.outcome.left = inputs.take(found)  # before any resume starts: verify/report/assembled.py checks it after all


def epoch_points(s: Settings, continuous: dict[int | None, observation.Observation]) -> tuple[int, ...]:
    """`--interrupt-at epochs` read off the continuous run: every k after which it made a new DataLoader iterator
    (an epoch starts, or an evaluation loop), and the middle of every stretch between them; with --epochs, every
    epoch's end, and the middles only where the pattern can name them (`{step}`, not `{epoch}`)."""
    if s.scripted.epoch_updates:
        ends = tuple(range(s.scripted.epoch_updates, s.steps, s.scripted.epoch_updates))
        if not ends:
            raise TrajectoryError(f"--interrupt-at epochs: --epochs {s.epochs} ends no epoch before the last update")
        return primary_first(ends if EPOCH in s.scripted.checkpoint else Epochs(0, ends).points(s.steps))
    boundaries = tuple(n - 1 for n in first_rank(continuous).iterators if 2 <= n <= s.steps)
    if not boundaries:
        raise TrajectoryError(
            "--interrupt-at epochs: the continuous run made no new DataLoader iterator after its first update, so "
            "no epoch boundary shows (no DataLoader, one epoch within --steps, or persistent workers): give k"
        )
    return primary_first(Epochs(rows=0, boundaries=boundaries).points(s.steps))


def first_rank(seen: dict[int | None, observation.Observation]) -> observation.Observation:
    """A trajectory's first record: the one process's, or rank 0's under a launcher."""
    return seen[min(seen, key=lambda rank: -1 if rank is None else rank)]


def stopped(seen: Observed) -> int:
    """The last update an interrupted run completed, from its first rank's record (the launcher's, if any)."""
    return stopped_at(first_rank(seen))


def stopped_at(seen: observation.Observation) -> int:
    """The last update an interrupted run completed: K for `exit`; under `sigterm`, whatever its handler let run."""
    return max(seen.stopped or 0, seen.completed or 0)
