"""A preempted trajectory's course (--preempt), judged from what Slurm and the job's own loss.jsonl say of it.

A job Slurm preempted must have been restarted once and have gone on from where it stopped; only then is its end a
resume's, judged as any resume against the continuous run (its RESUME check, judge/summaries/trainer.py). Each other
course a user meets fails this check with its own sentence: never requeued (the signal reached no process that
stopped, or the process stopped and nothing requeued the job), requeued more than once, started over from update 0
(a job that never finishes is not a resume, even where its end matches), or replayed from an older checkpoint than
the one its stop wrote. Two starts running at once are refused before any judging (verify/run/trajectories.py).

A protocol trainer's loss.jsonl says where it stopped and went on from (verify/run/launch/preempt.py). A script's
(--observe) is read off the observer's records (`course`): its first start stopped after the updates it completed,
and its restart went on from the update whose weights its first update starts from.
"""

from dataclasses import replace

from resumeproof.common import observation
from resumeproof.common.protocol import PREEMPTED, CheckId, CheckKind
from resumeproof.verify.plan.script import first_rank
from resumeproof.verify.run.launch import REQUEUE
from resumeproof.verify.run.launch.preempt import Preempted
from resumeproof.verify.vocabulary.findings import Check

Observed = dict[int | None, observation.Observation]
RESTART = observation.restarted(PREEMPTED, {observation.RESTART_ENV: "1"})  # the restart's records, by this name


def check(p: Preempted, trajectory: str = PREEMPTED) -> Check:
    """Whether the job (of `trajectory`) was restarted once and went on from where it stopped."""
    said = failure(p)
    name = f"{trajectory}: preempted by {_how(p)} after update {p.at}, restarted once by Slurm from where it stopped"
    resumed = p.resumed_from[0] if p.resumed_from else None
    return Check(
        id=CheckId(kind=CheckKind.PREEMPTION, trajectory=trajectory),
        name=name,
        passed=said is None,
        detail=said,
        resumed_at=resumed or None,
    )


def course(p: Preempted, first: Observed, restart: Observed | None, steps: int) -> Preempted:
    """A script's job with what the observer's records say: the update its first start stopped after (none where it
    ran to the end), and the one its restart went on from (`went_on_from`)."""
    completed = first_rank(first).completed or 0
    went = went_on_from(first, restart) if restart else None
    return replace(
        p, stopped_after=completed if completed < steps else None, resumed_from=() if went is None else (went,)
    )


def went_on_from(first: Observed, restart: Observed) -> int | None:
    """The update j of the first start whose weights the restart's first update starts from (its parameters at its
    first forward pass equal those the first start had after update j; j = 0: before its first update, a start
    over); None where they equal none of them (a restore that changed them, or weights from elsewhere)."""
    start, again = first_rank(first).updates, first_rank(restart).updates.get(1)
    model = again.forward.model if again is not None else None
    if not model:
        return None
    before = start[1].forward.model if 1 in start else None
    if before and _same(before, model):
        return 0
    after = {j: update.after.params for j, update in start.items() if update.after.params}
    return next((j for j in sorted(after, reverse=True) if _same(after[j] or {}, model)), None)


def _same(params: dict[str, str], model: dict[str, str]) -> bool:
    """Whether every parameter `params` names has the same digest in `model` (which holds the buffers too)."""
    return bool(params) and all(model.get(name) == digest for name, digest in params.items())


def failure(p: Preempted) -> str | None:
    """What went wrong with the preemption and the restart, in one sentence; None where nothing did."""
    slurm = f"Slurm: job {p.job_id} {p.state}, Restarts={p.restarts}"
    if len(p.starts) < 2:
        return _never_requeued(p, slurm)
    if len(p.starts) > 2 or p.restarts > 1:
        return f"requeued {max(len(p.starts) - 1, p.restarts)} times, once expected ({slurm})"
    stopped = p.stopped_after if p.stopped_after is not None else p.delivered_after
    if not p.resumed_from:
        return (
            "its restart went on from no update of its first start (no start logged in its run folder, or weights "
            f"that no update left) ({slurm})"
        )
    resumed = p.resumed_from[0]
    if resumed == 0:
        return (
            f"started over: its restart began again from update 0, not from update {stopped} where it stopped "
            f"(a job that never finishes is not a resume, whatever its end)"
        )
    if stopped is not None and resumed < stopped:
        return (
            f"replayed: its restart went on from update {resumed}, an older checkpoint than the stop after update "
            f"{stopped} (nothing saved at the preemption, or not in time)"
        )
    return None


def _never_requeued(p: Preempted, slurm: str) -> str:
    """Why a preempted job ran once: the signal reached no process that stopped, or nothing requeued the job."""
    if p.stopped_after is None:
        return f"never requeued: no process stopped on {_how(p)}: it ran on to its end ({slurm})"
    stopped = f"its process stopped{f' on {p.stopped_by}' if p.stopped_by else ''} after update {p.stopped_after}"
    if p.how == REQUEUE:
        return f"never restarted: {stopped} and Slurm did not start it again ({slurm})"
    return f"never requeued: {stopped} and nothing requeued the job (no `scontrol requeue`; {slurm})"


def _how(p: Preempted) -> str:
    return "`scontrol requeue`" if p.how == REQUEUE else f"its --signal {p.signal}"
