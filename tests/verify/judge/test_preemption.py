"""A preempted job's course (verify/judge/preemption.py): each course a user meets fails with its own sentence, and
only a job restarted once from where it stopped passes. The courses are the records real Slurm jobs left
(tests/e2e/test_preempt.py runs each on a real cluster)."""

from dataclasses import replace

import pytest

from resumeproof.common.protocol import PREEMPTED, CheckKind
from resumeproof.verify.judge import preemption
from resumeproof.verify.run.launch.job import Start
from resumeproof.verify.run.launch.preempt import Preempted

FIRST, AGAIN = Start("vm", "", "n1"), Start("vm", "", "n1", "1")
# A job preempted by its signal after update 3: stopped after 4, requeued itself, restarted once from 4.
RESUMED = Preempted(
    how="signal",
    signal="USR1",
    at=3,
    job_id="7",
    delivered_after=3,
    state="COMPLETED",
    restarts=1,
    exit_code=0,
    starts=(FIRST, AGAIN),
    holds=("released",),
    stopped_after=4,
    stopped_by="SIGUSR1",
    requeued_itself=True,
    resumed_from=(4,),
)
RAN_ONCE = replace(RESUMED, restarts=0, starts=(FIRST,), resumed_from=(), requeued_itself=False)


def test_a_job_restarted_once_from_where_it_stopped_passes_with_the_update_it_went_on_from():
    check = preemption.check(RESUMED)
    assert check.passed and check.detail is None and check.resumed_at == 4
    assert check.id.kind is CheckKind.PREEMPTION and check.id.trajectory == PREEMPTED


@pytest.mark.parametrize(
    ("course", "said"),
    [
        pytest.param(
            replace(RAN_ONCE, stopped_after=None, stopped_by=None),
            "never requeued: no process stopped on its --signal USR1: it ran on to its end "
            "(Slurm: job 7 COMPLETED, Restarts=0)",
            id="signal-reached-no-process-that-stopped",
        ),
        pytest.param(
            RAN_ONCE,
            "never requeued: its process stopped on SIGUSR1 after update 4 and nothing requeued the job "
            "(no `scontrol requeue`; Slurm: job 7 COMPLETED, Restarts=0)",
            id="stopped-but-nobody-requeued",
        ),
        pytest.param(
            replace(RAN_ONCE, how="requeue", stopped_by="SIGTERM", state="FAILED"),
            "never restarted: its process stopped on SIGTERM after update 4 and Slurm did not start it again "
            "(Slurm: job 7 FAILED, Restarts=0)",
            id="requeue-not-restarted",
        ),
        pytest.param(
            replace(RESUMED, restarts=2, starts=(FIRST, AGAIN, Start("vm", "", "n2", "2")), resumed_from=(4, 4)),
            "requeued 2 times, once expected (Slurm: job 7 COMPLETED, Restarts=2)",
            id="requeued-twice",
        ),
        pytest.param(
            replace(RESUMED, resumed_from=(0,)),
            "started over: its restart began again from update 0, not from update 4 where it stopped (a job that "
            "never finishes is not a resume, whatever its end)",
            id="started-over",
        ),
        pytest.param(
            replace(RESUMED, resumed_from=(2,)),
            "replayed: its restart went on from update 2, an older checkpoint than the stop after update 4 "
            "(nothing saved at the preemption, or not in time)",
            id="replayed",
        ),
        pytest.param(
            replace(RESUMED, resumed_from=()),
            "its restart went on from no update of its first start (no start logged in its run folder, or weights "
            "that no update left) (Slurm: job 7 COMPLETED, Restarts=1)",
            id="restart-elsewhere",
        ),
    ],
)
def test_each_other_course_fails_with_its_own_sentence(course, said):
    check = preemption.check(course)
    assert not check.passed and check.detail == said


def test_a_replay_with_no_stop_logged_is_held_against_the_update_slurm_was_told_at():
    """A process killed before it logged its stop: where it was when Slurm preempted it is what the restart owes."""
    course = replace(RESUMED, stopped_after=None, stopped_by=None, delivered_after=5, resumed_from=(2,))
    assert preemption.failure(course) is not None and "than the stop after update 5" in (
        preemption.failure(course) or ""
    )
    assert preemption.failure(replace(course, resumed_from=(5,))) is None
