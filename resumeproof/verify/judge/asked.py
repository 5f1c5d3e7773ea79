"""What a verification's runs so far ask for before its verdict: the judge's side of the rounds the pipeline runs
(verify/verification.py), asked again after each round until nothing new is asked for.

A protocol trainer is evaluated with every piece of evidence in hand (judge/summaries/evidence.py): a failed comparison
asks for the repeat; a resume whose cause is unknown, once the repeat showed the trainer deterministic, for the
probes (a resume without one candidate part each); a trainer that differs from itself for its other repeats and a
resume of 0 updates beside each resume (the two tiers); a negative control that changed nothing for the seeded run.
Each is evidence: one that fails is none, never the verification's error. A script (`--observe`) asks once: where
its continuous run and its repeat differ, the other repeats that measure its spread, which must run; then its
records are judged (judge/records/script.py). This module is the judge's one entry: the pipeline asks it alone.
"""

from collections.abc import Sequence
from dataclasses import dataclass

from resumeproof.common import observation, protocol
from resumeproof.common.protocol import CONTINUOUS, FLAT, REPEAT, REPEATS, RESUMED
from resumeproof.verify.judge.records import exact, versions
from resumeproof.verify.judge.records import script as script_judge
from resumeproof.verify.judge.records.first_update import repeatable
from resumeproof.verify.judge.summaries import evidence
from resumeproof.verify.judge.summaries.diagnosis import Context
from resumeproof.verify.judge.summaries.evidence import Evidence
from resumeproof.verify.judge.summaries.trainer import evaluate
from resumeproof.verify.plan import script as script_plan
from resumeproof.verify.plan import trainer as trainer_plan
from resumeproof.verify.run.summary import Summary
from resumeproof.verify.run.trajectories import Trajectory
from resumeproof.verify.settings import Settings
from resumeproof.verify.vocabulary.expectation import Expect
from resumeproof.verify.vocabulary.findings import DIVERGENT, Evaluated
from resumeproof.verify.vocabulary.status import Status

COMPARISONS = (protocol.CheckKind.PREFIX, protocol.CheckKind.RESUME, protocol.CheckKind.CADENCE)  # ask for evidence


@dataclass(frozen=True)
class Asked:
    """The next round: what is to run, whether it is evidence alone, and what the judge found of the runs so far."""

    trajectories: list[Trajectory]  # none: the runs so far are all the verdict needs
    evidence: bool = False  # one that fails is no evidence, never the verification's error
    evaluated: Evaluated | None = None  # the judge's evaluation of the runs so far


def of_trainer(s: Settings, trajectories: list[Trajectory]) -> Asked:
    """Evaluate a protocol trainer with the evidence in hand, and ask for what has not run."""
    summaries = summaries_of(trajectories)
    declared = summaries[CONTINUOUS].declared_parts
    found = _in_hand(trajectories, summaries, s.primary)
    evaluated = evaluate(
        trajectories, summaries, s.atol, declared or protocol.STANDARD_PARTS, found, not s.require_deterministic
    )
    more = _evidence_trajectories(s, evaluated, summaries, trajectories, declared)
    return Asked(more, evidence=True, evaluated=evaluated)


def of_script(s: Settings, trajectories: Sequence[Trajectory]) -> Asked:
    """A script whose continuous run and repeat differ (within --atol) asks for its other repeats: its spread. Once
    nothing more is asked, its records are judged, where they compare (made with the same fingerprints)."""
    records = script_judge.read(s, trajectories)
    names = {t.name for t in trajectories}
    asks = not s.require_deterministic and REPEATS[1] not in names
    if asks and exact.determinism(records[CONTINUOUS], records[REPEAT], s.atol)[0].deterministic is False:
        return Asked([script_plan.reference(s, name) for name in REPEATS[1:]])
    if observation.incomparable(seen for ranks in records.values() for seen in ranks.values()):
        return Asked([])  # the result says why (report/assembled.py): nothing is judged
    return Asked([], evaluated=script_judge.evaluate(s, trajectories, records))


def summaries_of(trajectories: Sequence[Trajectory]) -> dict[str, Summary]:
    return {t.name: t.outcome.accepted.summary for t in trajectories if t.outcome.accepted is not None}


def _in_hand(trajectories: list[Trajectory], summaries: dict[str, Summary], primary: int) -> Evidence:
    """The evidence the accepted trajectories hold: the repeat, the resumes without one part, the seeded run."""
    probes = {part: summaries[name] for name, part in _without_one_part(trajectories, primary) if name in summaries}
    done = [t for t in trajectories if t.observe and t.outcome.status == Status.DONE]
    observed = {t.name: observation.read_all(t.observe.record) for t in done if t.observe}
    if observation.incomparable(seen for ranks in observed.values() for seen in ranks.values()):
        observed = {}  # evidence only: digests of other fingerprints would tell a difference that is not there
    return Evidence(
        repeat=summaries.get(REPEAT),
        probes=probes,
        seeded=summaries.get(trainer_plan.SEEDED),
        observed=repeatable(observed),  # a clock kept on a module is no state of the run's
        across=versions.across(observed),
    )


def _without_one_part(trajectories: list[Trajectory], primary: int) -> list[tuple[str, str]]:
    """The resumes from the primary point without one part, a probe's or a fault's: (trajectory, part). The flat
    file's fault resumes from another file, not without a part: it is no probe."""
    kinds = (Expect.PROBE, Expect.DIVERGENT)  # a preempted job's restart went on from where it says: no probe
    expected = [(t.name, t.expectation) for t in trajectories if t.expectation is not None and t.preempt is None]
    return [
        (name, e.part)
        for name, e in expected
        if e.part and e.part != FLAT and e.resumed_at == primary and e.kind in kinds
    ]


def _evidence_trajectories(
    s: Settings,
    evaluated: Evaluated,
    summaries: dict[str, Summary],
    trajectories: list[Trajectory],
    declared: tuple[str, ...] | None,
) -> list[Trajectory]:
    """What the evaluation asks for that has not run: the repeat after a failed comparison; the probes once the
    repeat showed the trainer deterministic and the primary resume's cause is still unknown; the seeded run."""
    names = {t.name for t in trajectories}
    failed = [c for c in evaluated.checks if not c.passed]
    extra = []
    if any(c.id.kind in COMPARISONS for c in failed) and REPEAT not in names:
        extra.append(trainer_plan.reference(s, REPEAT))
    resumed = evaluated.resumes.get(RESUMED)
    unknown = resumed is not None and resumed.diagnosis is not None and not resumed.diagnosis.lost
    if declared and unknown and evaluated.determinism.deterministic and evaluated.across is None:  # no part lost
        context = Context(resumed_at=s.primary, parts=declared, atol=s.atol)
        wanted = evidence.candidates(summaries[CONTINUOUS], summaries[RESUMED], context)
        tried = {part for _, part in _without_one_part(trajectories, s.primary)}  # a fault run is a probe too
        extra += trainer_plan.probes(s, [p for p in wanted if p not in tried])
    if evaluated.determinism.deterministic is False and not s.require_deterministic:  # the two tiers' evidence
        extra += [trainer_plan.reference(s, name) for name in protocol.REPEATS if name not in names and name != REPEAT]
        watched = _watched(next(t for t in trajectories if t.name == CONTINUOUS))
        extra += [t for t in trainer_plan.restores(s, trajectories, watched) if t.name not in names]
    negative = evaluated.negative
    cannot = negative is not None and negative.verdict != DIVERGENT and negative.identical_to_full_resume
    if cannot and trainer_plan.SEEDED not in names:
        extra.append(trainer_plan.seeded(s))
    return extra


def _watched(t: Trajectory) -> bool:
    """Whether the observer watched the trajectory's process to the end (a trainer without torch, or whose
    interpreter ignores PYTHONPATH, leaves no records: it is judged from its files alone)."""
    seen = observation.read_all(t.observe.record) if t.observe is not None else {}
    return bool(seen) and not any(o.failed for o in seen.values())
