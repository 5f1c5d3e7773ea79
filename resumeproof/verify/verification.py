"""One verification: run the planned trajectories, accept what they wrote, gather evidence where a comparison
failed, evaluate, and build the `Verification` that verification.json and every report are made from.

The command line turns its outcome into an exit code (0 passed, 1 a comparison failed, 2 could not complete).
"""

import importlib
import threading
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from rich.console import Console

from resumeproof.common import observation, protocol
from resumeproof.common.errors import refuse_existing
from resumeproof.common.protocol import CONTINUOUS, FLAT, INTERRUPTED, REPEAT, RESUMED, CheckKind
from resumeproof.verify.plan import points
from resumeproof.verify.plan import trainer as trainer_plan
from resumeproof.verify.report import terminal
from resumeproof.verify.report.result import Verification, ran
from resumeproof.verify.run import environment, inputs, reuse
from resumeproof.verify.run.launch import LAUNCHES, launcher_for
from resumeproof.verify.run.outputs import Accepted
from resumeproof.verify.run.summary import Summary
from resumeproof.verify.run.trajectories import DONE, Trajectory, TrajectoryError, first_error, run_all
from resumeproof.verify.settings import ALL, Settings, primary_first
from resumeproof.verify.vocabulary.expectation import Expect
from resumeproof.verify.vocabulary.findings import DIVERGENT

if TYPE_CHECKING:  # the judging modules load once the first trainers run (see _accept)
    from resumeproof.verify.judge.evidence import Evidence
    from resumeproof.verify.vocabulary.findings import Evaluated

COMPARISONS = (CheckKind.PREFIX, CheckKind.RESUME, CheckKind.CADENCE)  # a failure here asks for the evidence


# What the verifier needs only once trainers finish: the checkpoint checkers (the interrupted run's accept, which its
# resume waits for), the judges and the report's package versions. Imported in a thread while the first trainers run,
# so that neither the resume nor the report waits for them; each is imported again where it is used, and an import
# that failed here fails there.
LATER = (
    "resumeproof.verify.run.accept",
    "resumeproof.verify.judge.summaries",
    "resumeproof.verify.judge.script",
    "importlib.metadata",
)


def verify(s: Settings, out: Console) -> Verification:
    """One verification, written to OUTPUT/verification.json: of a protocol trainer, or of a script (--observe)."""
    threading.Thread(target=_import_later, name="resumeproof-imports", daemon=True).start()
    if s.reuse_runs is not None:
        reuse.read(s.reuse_runs)  # before anything is written: a PREVIOUS that cannot be read stops it here
    if s.script:
        from resumeproof.verify import script_verification

        return script_verification.verify(s, out)
    refuse_existing(s.output)
    (s.output / "logs").mkdir(parents=True)
    (s.output / trainer_plan.OBSERVED).mkdir()
    s, trajectories, error = _planned(s, out)
    if error is None:
        _run(trajectories, s, out, lambda done: _declared_faults(s, done))
        error = first_error(trajectories)
    evaluated = None
    if error is None:
        evaluated = _with_evidence(trajectories, s, out)
        error = _restores_failed(trajectories)
        error = error or (_torch_load_all(trajectories) if s.torch_load else None)
    error = _inputs_unchanged(trajectories) or error  # a resume that wrote its input: the likely cause of any failure
    result = _result(s, trajectories, evaluated if error is None else None, error)
    if result.error is None and s.plot:
        from resumeproof.verify.report import plot as plot_module

        divergent = {t.name for t in trajectories if t.expectation and t.expectation.kind is Expect.DIVERGENT}
        result.plot = str(plot_module.write(s.output / "verification.png", _summaries(trajectories), s.atol, divergent))
    result.write(s.output / "verification.json")
    return result


def _import_later() -> None:
    for name in LATER:
        try:
            importlib.import_module(name)
        except Exception:  # imported again where it is used, and failing there as it would
            continue


def _planned(s: Settings, out: Console) -> tuple[Settings, list[Trajectory], str | None]:
    """The plan; with --interrupt-at epochs, the continuous run goes first and its history gives the points."""
    if not s.infer_points:
        return s, trainer_plan.build(s), None
    continuous = trainer_plan.reference(s)
    _run([continuous], s, out)
    if continuous.accepted is None:
        return s, [continuous], continuous.error
    try:
        found = points.infer(continuous.accepted.summary.history).points(s.steps)
    except points.EpochError as err:
        return s, [continuous], f"--interrupt-at epochs: {err}"
    s = replace(s, points=primary_first(found))
    return s, trainer_plan.build(s, continuous), None


def _declared_faults(s: Settings, done: Trajectory) -> list[Trajectory]:
    """--faults all: once the primary point ran, one fault per part it declares (or the standard set)."""
    if ALL not in s.faults or done.name != INTERRUPTED or done.accepted is None:
        return []
    given = [part for part in s.faults if part != ALL]
    declared = done.accepted.summary.declared_parts or protocol.STANDARD_PARTS
    return trainer_plan.faults(s, [part for part in declared if part not in given])


def _with_evidence(trajectories: list[Trajectory], s: Settings, out: Console) -> "Evaluated":
    """Evaluate with every piece of evidence in hand (a repeat --repeat planned, the fault runs as probes); while
    the evaluation asks for more (verify/judge/evidence.py: the repeat first, the probes once the trainer is shown
    deterministic, the seeded run), run it and evaluate again: rounds until nothing new is asked for."""
    from resumeproof.verify.judge.summaries import evaluate

    declared = _summaries(trajectories)[CONTINUOUS].declared_parts
    parts = declared or protocol.STANDARD_PARTS
    while True:
        summaries = _summaries(trajectories)
        found = _in_hand(trajectories, summaries, s.primary)
        evaluated = evaluate(trajectories, summaries, s.atol, parts, found, not s.require_deterministic)
        extra = _evidence_trajectories(s, evaluated, summaries, trajectories, declared)
        if not extra:  # each is asked for once, by name: the rounds end
            return evaluated
        trajectories += extra
        _run(trajectories, s, out)  # only the new ones are queued; a failed one is no evidence, never an error


def _in_hand(trajectories: list[Trajectory], summaries: dict[str, Summary], primary: int) -> "Evidence":
    """The evidence the accepted trajectories hold: the repeat, the resumes without one part, the seeded run."""
    from resumeproof.verify.judge.evidence import Evidence
    from resumeproof.verify.judge.first_update import repeatable

    probes = {part: summaries[name] for name, part in _without_one_part(trajectories, primary) if name in summaries}
    done = [t for t in trajectories if t.observe and t.status == DONE]
    observed = {t.name: observation.read_all(t.observe.record) for t in done if t.observe}
    if observation.comparable(seen for ranks in observed.values() for seen in ranks.values()):
        observed = {}  # evidence only: digests of other fingerprints would tell a difference that is not there
    return Evidence(
        repeat=summaries.get(REPEAT),
        probes=probes,
        seeded=summaries.get(trainer_plan.SEEDED),
        observed=repeatable(observed),  # a clock kept on a module is no state of the run's
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
    evaluated: "Evaluated",
    summaries: dict[str, Summary],
    trajectories: list[Trajectory],
    declared: tuple[str, ...] | None,
) -> list[Trajectory]:
    """What the evaluation asks for that has not run: the repeat after a failed comparison; the probes once the
    repeat showed the trainer deterministic and the primary resume's cause is still unknown; the seeded run."""
    from resumeproof.verify.judge import evidence
    from resumeproof.verify.judge.diagnosis import Context

    names = {t.name for t in trajectories}
    failed = [c for c in evaluated.checks if not c.passed]
    extra = []
    if any(c.id.kind in COMPARISONS for c in failed) and REPEAT not in names:
        extra.append(trainer_plan.reference(s, REPEAT))
    resumed = evaluated.resumes.get(RESUMED)
    unknown = resumed is not None and resumed.diagnosis is not None and not resumed.diagnosis.lost
    if declared and unknown and evaluated.determinism.deterministic:
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


def _run(trajectories: list[Trajectory], s: Settings, out: Console, expand: Any = None) -> None:
    launcher = launcher_for(s.launch, s.output / LAUNCHES)
    accept = lambda done: _accept(done, s)  # noqa: E731
    reused = reuse.reuser(s.reuse_runs, s.output, s.launch)
    with terminal.live(out, trajectories) as shown:
        run_all(trajectories, s.jobs, s.timeout, accept, shown, expand or (lambda done: []), launcher, reused)


def _accept(t: Trajectory, s: Settings) -> Accepted | None:
    # Late: the checkers (weights_only, DCP) load once the first trainers run, not before they start.
    from resumeproof.verify.run import accept

    if t.observe is not None and t.observe.stop is not None:  # ended by the observer: its records are what it left
        accept.halted(t)
        return None
    return accept.accept(t, s.allow)


def _summaries(trajectories: list[Trajectory]) -> dict[str, Summary]:
    return {t.name: t.accepted.summary for t in trajectories if t.accepted is not None}


def _result(
    s: Settings, trajectories: list[Trajectory], evaluated: "Evaluated | None", error: str | None
) -> Verification:
    summaries = _summaries(trajectories)
    ran_as = {t.name: ran(t) for t in trajectories}
    result = Verification.asked(s, protocol.PROTOCOL, environment.of(summaries), ran_as, error)
    declared = summaries[CONTINUOUS].declared_parts if CONTINUOUS in summaries else None
    result = replace(result, parts=declared or ())
    if evaluated is None:
        return result
    checkpoints = [t.accepted.checkpoint.check(t.name) for t in trajectories if t.accepted is not None]
    return result.judged(evaluated, checkpoints)


def _restores_failed(trajectories: list[Trajectory]) -> str | None:
    """A resume of 0 updates is the proof of a restore (verify/judge/summary_tiers.py): one that did not complete
    leaves the verification without it."""
    twins = [t for t in trajectories if t.expectation and t.expectation.id.kind is CheckKind.RESTORE]
    return first_error(twins)


def _inputs_unchanged(trajectories: list[Trajectory]) -> str | None:
    """A resume must read its checkpoint, never write it: re-hash every one resumed from, file by file, against the
    digests it was accepted with before its resumes started; the first file that differs is named."""
    resumed_from = {name for t in trajectories for name in t.after}
    taken = [t.accepted.checkpoint for t in trajectories if t.name in resumed_from and t.accepted is not None]
    return inputs.changed(inputs.accepted(info) for info in taken)


def _torch_load_all(trajectories: list[Trajectory]) -> str | None:
    """Load every checkpoint with torch itself; the first refusal, if any."""
    from resumeproof.verify.run import accept

    for t in trajectories:
        if t.accepted is not None:
            try:
                t.accepted = replace(t.accepted, checkpoint=accept.with_torch(t.accepted.checkpoint))
            except TrajectoryError as err:
                t.error = f"{t.name}: {err}"
                return t.error
    return None
