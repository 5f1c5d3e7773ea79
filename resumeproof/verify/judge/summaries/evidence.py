"""The evidence a failed comparison asks for before anything is blamed: determinism first, then probes.

- A repeat of the continuous run. A run that differs from itself (or an interrupted run whose first
  k updates differ from the continuous run's) is not deterministic: that is the verdict, and no part
  is blamed, whatever else differs.
- Resumes without one candidate part each, from the primary point (`probe-PART`, or the fault run
  when --faults asked for it), once the repeat showed the trainer deterministic. When the rules leave
  the cause unknown, a probe that reproduces the failed resume exactly is the evidence that names its
  part, even one whose end state equals the continuous run's.
- A run of 0 updates: when the negative control cannot diverge, it shows whether the generators were
  used at all between seeding and the interruption point.
Each is run only when a comparison failed (verify/verification.py, in rounds until nothing new is asked for),
so a pass costs nothing extra; what already ran (a repeat --repeat asked for, the fault runs) is always used.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field

from resumeproof.common import protocol
from resumeproof.common.observation import Observation
from resumeproof.verify.judge.compare import summaries
from resumeproof.verify.judge.summaries import diagnosis
from resumeproof.verify.judge.summaries.diagnosis import Context
from resumeproof.verify.run.summary import Summary
from resumeproof.verify.vocabulary.findings import Across, Determinism, Diagnosis


@dataclass(frozen=True)
class Evidence:
    repeat: Summary | None = None  # the continuous run, repeated
    probes: Mapping[str, Summary] = field(default_factory=dict)  # part -> a resume from the primary point without it
    seeded: Summary | None = None  # a run of 0 updates
    observed: Mapping[str, Mapping[int | None, Observation]] = field(default_factory=dict)  # trajectory -> records
    across: Across | None = (
        None  # the resumes ran in another environment than the continuous run (judge/records/versions.py)
    )


def determinism(
    continuous: Summary, repeat: Summary | None, prefix: tuple[str, Summary] | None, atol: float
) -> Determinism:
    """Whether the runs that must be the same are: the continuous run and its repeat, and the first k
    updates of an interrupted run (`prefix`: its name and summary) and of the continuous one."""
    if repeat is not None:
        result = summaries(continuous, repeat, atol)
        if not result.concordant:
            step, _, _ = diagnosis.first_record(continuous.history, repeat.history, atol)
            detail = "the continuous run and a repeat of it, the same command, differ"
            return Determinism(
                repeated=True, deterministic=False, first_step=step, first_mismatch=result.first_path, detail=detail
            )
    if prefix is not None:
        name, other = prefix
        step, _, evidence = diagnosis.first_record(continuous.history, other.history, atol)
        detail = f"{name} differs from the continuous run before the resume point"
        if repeat is not None:  # the repeat is exact: the first k updates depend on how many were asked for
            detail += (
                ", while the continuous run repeats itself exactly: its updates depend on --steps "
                "(a schedule or a data order sized by the run length)"
            )
        path = evidence[0].split(":")[0] if evidence else None
        return Determinism(
            repeated=repeat is not None, deterministic=False, first_step=step, first_mismatch=path, detail=detail
        )
    return Determinism(repeated=repeat is not None, deterministic=True if repeat is not None else None)


def not_deterministic(d: Determinism) -> Diagnosis:
    """What every failed comparison says when the trainer differs from itself: no part is blamed."""
    where = f" at {d.first_mismatch}" if d.first_mismatch else ""
    return Diagnosis(
        lost=(),
        rule="not-deterministic",
        step=d.first_step,
        evidence=f"{d.detail}{where}",
        explanation="the trainer is not deterministic, so no resume can be judged; docs/checks.md lists the usual "
        "causes (hash seeds, unseeded generators, threads, CUDA atomics, cudnn.benchmark)",
    )


def candidates(continuous: Summary, resumed: Summary, c: Context) -> list[str]:
    """The declared parts a probe may name, when the runs differ: every one but `progress`, including those whose
    end state equals the continuous run's. End state clears nothing here: a state that converges by itself (a loss
    scale that backs off and grows back, a plateau counter, a decayed buffer, a generator seeded again each epoch)
    looks restored at the end when it was lost. Only a probe that reproduces the failure names a part."""
    if diagnosis.facts(continuous, resumed, c) is None:
        return []
    return [part for part in c.parts if part != protocol.PROGRESS]


def confirm(found: Diagnosis, resumed: Summary, probes: Mapping[str, Summary]) -> Diagnosis:
    """An unknown cause named by the probes that reproduce the failed resume exactly, if any."""
    if found.lost or not probes:
        return found
    same = [part for part, probe in probes.items() if diagnosis.identical(probe, resumed)]
    tried = ", ".join(probes)
    if len(same) == 1:
        explanation = f"a resume with --omit={same[0]} reproduces this run exactly: it was not restored"
        return Diagnosis(
            lost=(same[0],), rule="reproduced", step=found.step, evidence=found.evidence, explanation=explanation
        )
    if same:
        explanation = f"a resume without any one of {', '.join(same)} reproduces this run exactly: one was not restored"
    else:
        explanation = f"{found.explanation}; no resume without one of the declared parts ({tried}) reproduces it"
    return Diagnosis(lost=(), rule="probed", step=found.step, evidence=found.evidence, explanation=explanation)


def no_power(interrupted: Summary, seeded: Summary | None, k: int, parts: tuple[str, ...]) -> Diagnosis | None:
    """The negative control cannot diverge when the generators draw at k what they draw right after seeding."""
    if seeded is None:
        return None
    at_k, at_seed = diagnosis.draws(interrupted, parts), diagnosis.draws(seeded, parts)
    if not at_k or at_k != at_seed:
        return None
    names = ", ".join(at_k)
    return Diagnosis(
        lost=(),
        rule="no-power",
        step=None,
        evidence=f"next draws of {names} at k = {k} equal those at step 0",
        explanation=f"the generators were not used between seeding and k = {k}, so a resume without them cannot "
        "diverge here; try a later --interrupt-at, or epochs",
    )
