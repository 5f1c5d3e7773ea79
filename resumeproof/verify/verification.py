"""One verification, plan -> run -> judge -> report, the same pipeline for a protocol trainer and for a script as it
is (`--observe`); what differs between them is a `Way`, a table of the stages' own functions.

1. The plan's first trajectories run (all of them; with the points or N still to be read off the continuous run,
   that run first, then the rest of the plan once they are: `infer`). Each finished process is accepted as its
   way requires, and may add trajectories (`expand`: the faults a trainer declares, a script's resumes).
2. Rounds: the judge says what the runs so far ask for (`ask`: evidence for a trainer's diagnosis, a script's
   spread) until nothing new is; a failed piece of evidence is none, never the verification's error.
3. The result assembled (`result`): the last checks that can stop it, the judge's findings, one `Verification`,
   written to OUTPUT/verification.json; the command line turns it into an exit code (0 passed, 1 a comparison
   failed, 2 could not complete).
"""

import importlib
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.console import Console

from resumeproof.common.errors import refuse_existing
from resumeproof.verify.plan import script as script_plan
from resumeproof.verify.plan import trainer as trainer_plan
from resumeproof.verify.report import terminal
from resumeproof.verify.report.result import Verification
from resumeproof.verify.run import reuse
from resumeproof.verify.run.launch import LAUNCHES, launcher_for
from resumeproof.verify.run.outputs import Accepted
from resumeproof.verify.run.trajectories import Trajectory, first_error, run_all
from resumeproof.verify.settings import Script, Settings

if TYPE_CHECKING:  # the judging modules load once the first trainers run (see LATER)
    from resumeproof.verify.judge.asked import Asked
    from resumeproof.verify.vocabulary.findings import Evaluated

# What the verifier needs only once trainers finish: the checkpoint checkers (the interrupted run's accept, which its
# resume waits for), the judges and the report's package versions. Imported in a thread while the first trainers run,
# so that neither the resume nor the report waits for them; each is imported again where it is used, and an import
# that failed here fails there.
LATER = (
    "resumeproof.verify.run.accept",
    "resumeproof.verify.judge.asked",
    "resumeproof.verify.report.assembled",
    "importlib.metadata",
)


@dataclass(frozen=True)
class Way:
    """What differs between verifying a protocol trainer and a script: each stage's own function for it."""

    first: Callable[[Settings], list[Trajectory]]  # what runs first
    accept: Callable[[Settings, Trajectory], Accepted | None]  # what a finished process must have left
    expand: Callable[[Settings, Trajectory], list[Trajectory]]  # what a finished process adds to the plan
    infer: Callable[[Settings, Sequence[Trajectory]], tuple[Settings, list[Trajectory], str | None]]  # points, N
    ask: "Callable[[Settings, list[Trajectory]], Asked]"  # what the runs so far ask for
    result: "Callable[[Settings, list[Trajectory], Evaluated | None, str | None], Verification]"


def _accept_summary(s: Settings, t: Trajectory) -> Accepted | None:
    # Late: the checkers (weights_only, DCP) load once the first trainers run, not before they start.
    from resumeproof.verify.run import accept

    if t.observe is not None and t.observe.stop is not None:  # ended by the observer: its records are what it left
        accept.halted(t)
        return None
    return accept.accept(t, s.subject.allow)


def _ask_trainer(s: Settings, trajectories: list[Trajectory]) -> "Asked":
    from resumeproof.verify.judge import asked

    return asked.of_trainer(s, trajectories)


def _ask_script(s: Settings, trajectories: list[Trajectory]) -> "Asked":
    from resumeproof.verify.judge import asked

    return asked.of_script(s, trajectories)


def _trainer_result(s: Settings, ran: list[Trajectory], found: "Evaluated | None", error: str | None) -> Verification:
    from resumeproof.verify.report import assembled

    return assembled.of_trainer(s, ran, found, error)


def _script_result(s: Settings, ran: list[Trajectory], found: "Evaluated | None", error: str | None) -> Verification:
    from resumeproof.verify.report import assembled

    return assembled.of_script(s, ran, found, error)


TRAINER = Way(
    first=trainer_plan.first,
    accept=_accept_summary,
    expand=trainer_plan.declared_faults,
    infer=trainer_plan.inferred,
    ask=_ask_trainer,
    result=_trainer_result,
)
SCRIPT = Way(
    first=script_plan.build,
    accept=script_plan.accept,
    expand=script_plan.expand,
    infer=script_plan.inferred,
    ask=_ask_script,
    result=_script_result,
)


def verify(s: Settings, out: Console) -> Verification:
    """One verification, written to OUTPUT/verification.json: of a protocol trainer, or of a script (--observe)."""
    threading.Thread(target=_import_later, name="resumeproof-imports", daemon=True).start()
    if s.reuse_runs is not None:
        reuse.read(s.reuse_runs)  # before anything is written: a PREVIOUS that cannot be read stops it here
    refuse_existing(s.output)
    (s.output / "logs").mkdir(parents=True)
    (s.output / trainer_plan.OBSERVED).mkdir()
    way = SCRIPT if isinstance(s.subject, Script) else TRAINER
    trajectories = way.first(s)
    error = _run(trajectories, s, way, out)
    if error is None and s.deferred:  # the points, or N, read off the continuous run; then the rest of the plan
        s, rest, error = way.infer(s, trajectories)
        trajectories += rest
        error = error or _run(trajectories, s, way, out)
    evaluated = None
    while error is None:
        asked = way.ask(s, trajectories)
        evaluated = asked.evaluated
        if not asked.trajectories:
            break
        trajectories += asked.trajectories
        failed = _run(trajectories, s, way, out)  # only the new ones are queued
        error = None if asked.evidence else failed
    result = way.result(s, trajectories, evaluated, error)
    result.write(s.output / "verification.json")
    return result


def _run(trajectories: list[Trajectory], s: Settings, way: Way, out: Console) -> str | None:
    """Run what is queued (the trajectories added as others finish among them); the first reason one failed."""
    launcher = launcher_for(s.launch, s.output / LAUNCHES)
    reused = reuse.reuser(s.reuse_runs, s.output, s.launch)
    accept, expand = (lambda done: way.accept(s, done)), (lambda done: way.expand(s, done))
    with terminal.live(out, trajectories) as shown:
        run_all(trajectories, s.jobs, s.timeout, accept, shown, expand, launcher, reused)
    return first_error(trajectories)


def _import_later() -> None:
    for name in LATER:
        try:
            importlib.import_module(name)
        except Exception:  # imported again where it is used, and failing there as it would
            continue
