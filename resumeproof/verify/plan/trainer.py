"""Which trajectories a verification runs, and what each one must show against the continuous run.

Every trajectory is a fresh process of the training command. Besides the four of the protocol
(continuous, interrupted, resumed, resumed-no-rng), a verification can add an interrupted and
resumed pair for every interruption point, chains of segments, a continuous run that writes a
checkpoint after every step, and one resume per deliberately omitted part (the fault matrix).
Each carries its expectation: a history prefix, concordance, or divergence. When a comparison
fails, the evidence trajectories follow (verify/verification.py): a repeat of the continuous run,
resumes without one candidate part, and a run of 0 updates.
"""

import sys
from collections.abc import Sequence
from dataclasses import replace

from resumeproof.common import observation, protocol
from resumeproof.common.protocol import (
    CADENCE,
    CONTINUOUS,
    FLAT,
    INTERRUPTED,
    OMIT_RNG_FLAG,
    OUTPUT_FLAG,
    PREEMPTED,
    REPEAT,
    RESUME_FLAG,
    RESUMED,
    RESUMED_NO_RNG,
    STEPS_FLAG,
    CheckId,
    CheckKind,
)
from resumeproof.verify.plan import points
from resumeproof.verify.run.launch import SIGNAL, Preempt
from resumeproof.verify.run.trajectories import Observe, Trajectory
from resumeproof.verify.settings import ALL, Settings
from resumeproof.verify.vocabulary.expectation import Expect, Expectation

FLAT_FILE = "flat.bin"
OBSERVED = "observed"  # the folder of the observer's records, one (or one per rank) per trajectory
SEEDED = "seeded"  # a run of 0 updates: what the generators draw right after seeding
# --preempt: seconds the preempted job sleeps after each update (--pace: changes no computed value), so that Slurm's
# preemption, sent once loss.jsonl logs update k, lands within an update or two of it
PREEMPT_PACE = 0.25


def reference(s: Settings, name: str = CONTINUOUS) -> Trajectory:
    """The continuous run every other trajectory is held against (or, as REPEAT, a repeat of it)."""
    argv = [*s.command, STEPS_FLAG, str(s.steps), OUTPUT_FLAG, str(s.output / name)]
    expect = None
    if name == REPEAT:
        check = CheckId(kind=CheckKind.DETERMINISM, trajectory=REPEAT)
        expect = Expectation(kind=Expect.REPEAT, id=check, name="the continuous run repeats itself exactly")
    starts = [*s.points, *(sum(chain[:j]) for chain in s.trainer.segments for j in range(1, len(chain)))]
    around = {n for k in starts for n in (k, k + 1, k + 2)}  # the last update before each resume, the two after it
    observe = _observe(s, name, {1, s.steps, *around})
    log = s.output / "logs" / f"{name}.log"
    return Trajectory(name, argv, s.output / name, log, planned=expect, reports_step=s.steps, observe=observe)


def _observe(s: Settings, name: str, updates: set[int]) -> Observe | None:
    """The observer's records of a trajectory: the updates of its process to record, counted from 1."""
    wanted = frozenset(n for n in updates if 1 <= n <= s.steps)
    return Observe(s.output / OBSERVED / name, wanted) if s.trainer.observe and wanted else None


def _trajectory(
    s: Settings,
    name: str,
    steps: int,
    reports: int | None,
    expect: Expectation | None,
    extra: Sequence[str] = (),
    after: str | None = None,
    prepare: tuple[tuple[str, ...], ...] = (),
) -> Trajectory:
    command = s.resume_command if after else s.command  # a process that resumes runs --resume-cmd
    argv = [*command, STEPS_FLAG, str(steps), OUTPUT_FLAG, str(s.output / name), *extra]
    log = s.output / "logs" / f"{name}.log"
    observe = _observe(s, name, {1, 2, steps})  # its first two updates, and its last
    return Trajectory(
        name, argv, s.output / name, log, (after,) if after else (), prepare, expect, reports, observe=observe
    )


def _resume(s: Settings, name: str) -> list[str]:
    return [RESUME_FLAG, str(s.output / name / protocol.CHECKPOINT)]


def first(s: Settings) -> list[Trajectory]:
    """What runs first: the whole plan; with --interrupt-at epochs the continuous run alone, whose history gives the
    points (`inferred`)."""
    return [reference(s)] if s.deferred else build(s)


def inferred(s: Settings, trajectories: Sequence[Trajectory]) -> tuple[Settings, list[Trajectory], str | None]:
    """--interrupt-at epochs: the points read off the continuous run's history, and the rest of the plan; or why
    the history cannot tell them."""
    continuous = trajectories[0]
    assert continuous.outcome.accepted is not None, "a continuous run that failed ends the verification before this"
    try:
        found = points.infer(continuous.outcome.accepted.summary.history).points(s.steps)
    except points.EpochError as err:
        return s, [], f"--interrupt-at epochs: {err}"
    s = s.with_points(found)
    return s, [t for t in build(s, continuous) if t is not continuous], None


def declared_faults(s: Settings, done: Trajectory) -> list[Trajectory]:
    """--faults all: once the primary point ran, one fault per part it declares (or the standard set)."""
    if ALL not in s.faults or done.name != INTERRUPTED or done.outcome.accepted is None:
        return []
    given = [part for part in s.faults if part != ALL]
    declared = done.outcome.accepted.summary.declared_parts or protocol.STANDARD_PARTS
    return faults(s, [part for part in declared if part not in given])


def build(s: Settings, continuous: Trajectory | None = None) -> list[Trajectory]:
    """The trajectories of a verification, each knowing what it must show; `continuous` may be one
    already run (to infer the interruption points from its history)."""
    assert s.points, "interruption points are known before the plan is built"
    plan: list[Trajectory] = [continuous or reference(s)]
    for k in s.points:
        interrupted, resumed = point_names(k, k == s.primary)
        check = CheckId(kind=CheckKind.PREFIX, trajectory=interrupted)
        name = f"{interrupted}: history = first {k} records of continuous"
        prefix = Expectation(kind=Expect.PREFIX, id=check, name=name, steps=k)
        plan.append(_trajectory(s, interrupted, k, k, prefix))
        check = CheckId(kind=CheckKind.RESUME, trajectory=resumed)
        name = f"{resumed} (from step {k}) concordant with continuous"
        concordant = Expectation(kind=Expect.CONCORDANT, id=check, name=name, resumed_at=k)
        plan.append(_trajectory(s, resumed, s.steps - k, s.steps, concordant, _resume(s, interrupted), interrupted))
    primary, rest = point_names(s.primary, True)[0], s.steps - s.primary
    check = CheckId(kind=CheckKind.NEGATIVE_CONTROL, trajectory=RESUMED_NO_RNG)
    name = "resume without RNG restore diverges (negative control)"
    negative = Expectation(kind=Expect.DIVERGENT, id=check, name=name, resumed_at=s.primary)
    plan.append(_trajectory(s, RESUMED_NO_RNG, rest, s.steps, negative, [*_resume(s, primary), OMIT_RNG_FLAG], primary))
    plan += faults(s, [part for part in s.faults if part != ALL])
    plan += _chains(s)
    if s.trainer.cadence:
        check = CheckId(kind=CheckKind.CADENCE, trajectory=CADENCE)
        name = "writing a checkpoint every step changes nothing"
        cadence = Expectation(kind=Expect.CONCORDANT, id=check, name=name, generations=True)
        plan.append(
            _trajectory(s, CADENCE, s.steps, s.steps, cadence, [protocol.CHECKPOINT_EVERY_FLAG, str(s.trainer.cadence)])
        )
    if s.trainer.repeat:
        plan.append(reference(s, REPEAT))
    if s.launch.preempt is not None:
        plan.append(preempted(s))
    return plan


def preempted(s: Settings, part: str | None = None) -> Trajectory:
    """--preempt: the training command as the self-resuming job a user submits (`--resume auto --until-step N` in a
    folder of its own, and with `signal` its requeue on the job's signal), paced so that Slurm's preemption lands
    right after update k (the primary point); Slurm restarts it, and its end must be the continuous run's. With
    `part` (--faults), the same job told to omit it, which only its restart can (`--omit`): it must diverge."""
    how, k = s.launch.preempt or "", s.primary
    name = PREEMPTED if part is None else protocol.preempted_fault(part)
    out = s.output / name
    argv = [*s.command, RESUME_FLAG, protocol.AUTO, protocol.UNTIL_STEP_FLAG, str(s.steps), OUTPUT_FLAG, str(out)]
    argv += [protocol.PACE_FLAG, str(PREEMPT_PACE)]
    if how == SIGNAL:
        argv += [protocol.REQUEUE_ON_FLAG, s.launch.slurm_signal.name]
    by = f"by {how} after update {k}, restarted by Slurm"
    if part is None:
        check = CheckId(kind=CheckKind.RESUME, trajectory=name)
        expect = Expectation(
            kind=Expect.CONCORDANT, id=check, name=f"{name} ({by}) concordant with continuous", resumed_at=k
        )
    else:
        argv.append(protocol.omit_token(part))
        check = CheckId(kind=CheckKind.FAULT, trajectory=name, part=part)
        said = f"{name} ({by}, without {part}) diverges"
        expect = Expectation(kind=Expect.DIVERGENT, id=check, name=said, part=part, resumed_at=k)
    log = s.output / "logs" / f"{name}.log"
    plan = Preempt(how, k, s.launch.slurm_signal)
    return Trajectory(name, argv, out, log, planned=expect, reports_step=s.steps, preempt=plan)


def faults(s: Settings, parts: Sequence[str]) -> list[Trajectory]:
    """One resume from the primary point per omitted part, and with --preempt one job Slurm preempts whose restart
    omits it; each must diverge."""
    primary, rest = point_names(s.primary, True)[0], s.steps - s.primary
    out = []
    for part in parts:
        check = CheckId(kind=CheckKind.FAULT, trajectory=f"{protocol.FAULT_PREFIX}{part}", part=part)
        fault = Expectation(
            kind=Expect.DIVERGENT, id=check, name=f"resume without {part} diverges", part=part, resumed_at=s.primary
        )
        if part == FLAT:  # the flat file is exported from the primary checkpoint first, in the same job
            flat = s.output / "inputs" / FLAT_FILE  # not in the fault's own --output, which must not exist
            export = (sys.executable, "-B", "-m", "resumeproof", "flat", "export", _resume(s, primary)[1], str(flat))
            extra = [protocol.RESUME_FLAT_FLAG, str(flat)]
            out.append(_trajectory(s, check.trajectory or "", rest, None, fault, extra, primary, (export,)))
        else:
            extra = [*_resume(s, primary), protocol.omit_token(part)]
            out.append(_trajectory(s, check.trajectory or "", rest, None, fault, extra, primary))
    if s.launch.preempt is not None:  # and the job Slurm preempts, its restart without each part
        out += [preempted(s, part) for part in parts if part != FLAT]
    return out


def probes(s: Settings, parts: Sequence[str]) -> list[Trajectory]:
    """Resumes from the primary point without one candidate part each: one that reproduces a failed resume
    exactly is the evidence that names the part (verify/judge/summaries/evidence.py)."""
    primary, rest = point_names(s.primary, True)[0], s.steps - s.primary
    out = []
    for part in parts:
        name = f"probe-{part}"
        check = CheckId(kind=CheckKind.FAULT, trajectory=name, part=part)
        probe = Expectation(kind=Expect.PROBE, id=check, name=name, part=part, resumed_at=s.primary)
        extra = [*_resume(s, primary), protocol.omit_token(part)]
        out.append(_trajectory(s, name, rest, None, probe, extra, primary))
    return out


def restores(s: Settings, trajectories: Sequence[Trajectory], observed: bool) -> list[Trajectory]:
    """For a trainer that is not deterministic: beside every resume that makes a check (the resumes, the negative
    control, the faults, a chain's last segment), the same command from the same checkpoint for 0 updates. Its
    summary is the state that resume starts from, held bit for bit against what the run it resumed from saved
    (the restore tier, judge/summaries/tiers.py). Where the observer watches the trainer (`observed`), beside
    every resume that must be concordant also the same resume ended right before its first step: what the
    checkpoint feeds the first resumed update, which no summary reports (a batch drawn through a mapping each
    process builds anew)."""
    out = []
    for t in trajectories:
        e = t.expectation
        if e is None or not t.after or e.kind not in (Expect.CONCORDANT, Expect.DIVERGENT) or e.part == FLAT:
            continue  # the flat file's fault resumes from another file: the spread alone judges it
        name = protocol.restored_name(t.name)
        check = CheckId(kind=CheckKind.RESTORE, trajectory=t.name)
        twin = Expectation(kind=Expect.PROBE, id=check, name=name, resumed_at=e.resumed_at)
        extra = t.argv[t.argv.index(OUTPUT_FLAG, len(s.resume_command)) + 2 :]  # its --resume, --omit, ...
        out.append(_trajectory(s, name, 0, None, twin, extra, t.after[0], t.prepare))
        if observed and e.kind is Expect.CONCORDANT:
            out.append(_fed(s, t, twin))
    return out


def _fed(s: Settings, resume: Trajectory, twin: Expectation) -> Trajectory:
    """`resume`'s command again, into its own output, ended by the observer right before its first step."""
    name = protocol.fed_name(resume.name)
    argv = list(resume.argv)
    argv[argv.index(OUTPUT_FLAG, len(s.resume_command)) + 1] = str(s.output / name)
    watch = Observe(s.output / OBSERVED / name, frozenset({1}), stop=(observation.EXIT, 0))
    log = s.output / "logs" / f"{name}.log"
    fed = replace(twin, name=name)
    return Trajectory(name, argv, s.output / name, log, resume.after, resume.prepare, fed, observe=watch)


def seeded(s: Settings) -> Trajectory:
    """A run of 0 updates: its next draws are the generators' right after seeding."""
    probe = Expectation(kind=Expect.PROBE, id=CheckId(kind=CheckKind.NEGATIVE_CONTROL, trajectory=SEEDED), name=SEEDED)
    return _trajectory(s, SEEDED, 0, 0, probe)


def _chains(s: Settings) -> list[Trajectory]:
    out = []
    for c, chain in enumerate(s.trainer.segments, start=1):
        done, before = 0, None
        for j, steps in enumerate(chain, start=1):
            name, done = f"{protocol.CHAIN_PREFIX}{c}-seg{j}", done + steps
            label = f"chain {','.join(map(str, chain))} segment {j}"
            if done < s.steps:
                check = CheckId(kind=CheckKind.PREFIX, trajectory=name)
                expect = Expectation(
                    kind=Expect.PREFIX, id=check, name=f"{label}: history = first {done} records", steps=done
                )
            else:
                check = CheckId(kind=CheckKind.RESUME, trajectory=name)
                expect = Expectation(
                    kind=Expect.CONCORDANT,
                    id=check,
                    name=f"{label} concordant with continuous",
                    resumed_at=done - steps,
                )
            out.append(_trajectory(s, name, steps, done, expect, _resume(s, before) if before else [], before))
            before = name
    return out


def point_names(k: int, primary: bool) -> tuple[str, str]:
    """The primary point keeps the protocol's plain names; every other point is suffixed with its k."""
    return (INTERRUPTED, RESUMED) if primary else (f"{INTERRUPTED}-{k}", f"{RESUMED}-{k}")
