"""A preempted trajectory's course (--preempt), judged from what Slurm and the job's own loss.jsonl say of it.

A job Slurm preempted must have been restarted once and have gone on from where it stopped; only then is its end a
resume's, judged as any resume against the continuous run (its RESUME check, verify/judge/summaries.py). Each other
course a user meets fails this check with its own sentence: never requeued (the signal reached no process that
stopped, or the process stopped and nothing requeued the job), requeued more than once, started over from update 0
(a job that never finishes is not a resume, even where its end matches), or replayed from an older checkpoint than
the one its stop wrote. Two starts running at once are refused before any judging (verify/run/trajectories.py).
"""

from resumeproof.common.protocol import PREEMPTED, CheckId, CheckKind
from resumeproof.verify.judge.findings import Check
from resumeproof.verify.run.launch import REQUEUE
from resumeproof.verify.run.launch.preempt import Preempted


def check(p: Preempted) -> Check:
    """Whether the job was restarted once and went on from where it stopped."""
    said = failure(p)
    name = f"{PREEMPTED}: preempted by {_how(p)} after update {p.at}, restarted once by Slurm from where it stopped"
    resumed = p.resumed_from[0] if p.resumed_from else None
    return Check(
        id=CheckId(kind=CheckKind.PREEMPTION, trajectory=PREEMPTED),
        name=name,
        passed=said is None,
        detail=said,
        resumed_at=resumed or None,
    )


def failure(p: Preempted) -> str | None:
    """What went wrong with the preemption and the restart, in one sentence; None where nothing did."""
    slurm = f"Slurm: job {p.job_id} {p.state}, Restarts={p.restarts}"
    if len(p.starts) < 2:
        return _never_requeued(p, slurm)
    if len(p.starts) > 2 or p.restarts > 1:
        return f"requeued {max(len(p.starts) - 1, p.restarts)} times, once expected ({slurm})"
    stopped = p.stopped_after if p.stopped_after is not None else p.delivered_after
    if not p.resumed_from:
        return f"its restart logged no start in its run folder: it did not go on where it stopped ({slurm})"
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
        return f"never requeued: no process stopped on {_how(p)} (no stop in its loss.jsonl; {slurm})"
    if p.how == REQUEUE:
        stopped = f"its process stopped after update {p.stopped_after}"
        return f"never restarted: {stopped} and Slurm did not start it again ({slurm})"
    return (
        f"never requeued: its process stopped on {p.stopped_by} after update {p.stopped_after} and nothing requeued "
        f"the job (no `scontrol requeue`; {slurm})"
    )


def _how(p: Preempted) -> str:
    return "`scontrol requeue`" if p.how == REQUEUE else f"its --signal {p.signal}"
