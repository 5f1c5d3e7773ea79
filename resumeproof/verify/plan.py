"""Which trajectories a verification runs, and what each one must show against the continuous run.

Every trajectory is a fresh process of the training command. Besides the four of the protocol
(continuous, interrupted, resumed, resumed-no-rng), a verification can add an interrupted and
resumed pair for every interruption point, chains of segments, a continuous run that writes a
checkpoint after every step, and one resume per deliberately omitted part (the fault matrix).
Each added trajectory carries its expectation: a history prefix, concordance, or divergence.
"""

import sys
from collections.abc import Sequence

from resumeproof.common import protocol
from resumeproof.verify.expectation import Expect, Expectation
from resumeproof.verify.settings import FLAT, Settings
from resumeproof.verify.trajectories import Trajectory

CONTINUOUS, INTERRUPTED, RESUMED, RESUMED_NO_RNG = "continuous", "interrupted", "resumed", "resumed-no-rng"
CADENCE = "continuous-every-1"  # writes a checkpoint after every step: must not disturb the run
FLAT_FILE = "flat.bin"


def reference(s: Settings) -> Trajectory:
    """The continuous run every other trajectory is held against."""
    argv = [*s.command, "--steps", str(s.steps), "--output", str(s.output / CONTINUOUS)]
    return Trajectory(
        CONTINUOUS, argv, s.output / CONTINUOUS, s.output / "logs" / f"{CONTINUOUS}.log", reports_step=s.steps
    )


def build(s: Settings, continuous: Trajectory | None = None) -> list[Trajectory]:
    """The trajectories of a verification, each knowing what it must show; `continuous` may be one
    already run (to infer the interruption points from its history)."""
    assert s.points, "interruption points are known before the plan is built"
    plan: list[Trajectory] = [continuous or reference(s)]

    def add(
        name: str, steps: int, reports: int | None, expect: Expectation | None, extra: Sequence[str] = (),
        after: str | None = None, prepare: tuple[tuple[str, ...], ...] = (),
    ) -> None:  # fmt: skip
        command = s.resume_command if after else s.command  # a process that resumes runs --resume-cmd
        argv = [*command, "--steps", str(steps), "--output", str(s.output / name), *extra]
        log = s.output / "logs" / f"{name}.log"
        plan.append(Trajectory(name, argv, s.output / name, log, (after,) if after else (), prepare, expect, reports))

    def resume(name: str) -> list[str]:
        return ["--resume", str(s.output / name / protocol.CHECKPOINT)]

    for k in s.points:
        interrupted, resumed = _point_names(k, k == s.primary)
        prefix = Expectation(Expect.PREFIX, f"{interrupted}: history = first {k} records of continuous", k)
        add(interrupted, k, k, prefix)
        check = f"{resumed} (from step {k}) concordant with continuous"
        concordant = Expectation(Expect.CONCORDANT, check, resumed_at=k)
        add(resumed, s.steps - k, s.steps, concordant, resume(interrupted), interrupted)
    primary, rest = _point_names(s.primary, True)[0], s.steps - s.primary
    negative = Expectation(
        Expect.DIVERGENT, "resume without RNG restore diverges (negative control)", resumed_at=s.primary
    )
    add(RESUMED_NO_RNG, rest, s.steps, negative, [*resume(primary), "--omit-rng-restore"], primary)
    for part in s.faults:
        fault = Expectation(Expect.DIVERGENT, f"resume without {part} diverges", part=part, resumed_at=s.primary)
        if part == FLAT:  # the flat file is exported from the primary checkpoint first, in the same job
            flat = s.output / "inputs" / FLAT_FILE  # not in the fault's own --output, which must not exist
            export = (sys.executable, "-B", "-m", "resumeproof", "flat", "export", resume(primary)[1], str(flat))
            add(f"fault-{part}", rest, None, fault, ["--resume-flat", str(flat)], primary, (export,))
        else:
            # One token, `--omit=PART`: an argparse trainer that lacks --omit cannot read it as an
            # abbreviation of --omit-rng-restore and silently run a different fault.
            add(f"fault-{part}", rest, None, fault, [*resume(primary), f"--omit={part}"], primary)
    for c, chain in enumerate(s.segments, start=1):
        done, before = 0, None
        for j, steps in enumerate(chain, start=1):
            name, done = f"chain{c}-seg{j}", done + steps
            label = f"chain {','.join(map(str, chain))} segment {j}"
            expect = (
                Expectation(Expect.PREFIX, f"{label}: history = first {done} records", done)
                if done < s.steps
                else Expectation(Expect.CONCORDANT, f"{label} concordant with continuous", resumed_at=done - steps)
            )
            add(name, steps, done, expect, resume(before) if before else [], before)
            before = name
    if s.cadence:
        cadence = Expectation(Expect.CONCORDANT, "writing a checkpoint every step changes nothing", generations=True)
        add(CADENCE, s.steps, s.steps, cadence, ["--checkpoint-every", str(s.cadence)])
    return plan


def _point_names(k: int, primary: bool) -> tuple[str, str]:
    """The primary point keeps the protocol's plain names; every other point is suffixed with its k."""
    return (INTERRUPTED, RESUMED) if primary else (f"{INTERRUPTED}-{k}", f"{RESUMED}-{k}")
