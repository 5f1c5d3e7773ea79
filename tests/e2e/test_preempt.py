"""`verify --launcher slurm --preempt signal|requeue` on a real two-node Slurm (tests/slurm_cluster.py): the job Slurm
preempts after update k and restarts is judged by its course and by its end.

train.py passes both ways; with `--faults optimizer` the job is preempted again, its restart told to omit the
optimizer, and that restart diverges, named. Three trainers whose own resumes (`--resume PATH`) are train.py's, each
breaking only the self-resume a restarted job makes (`--resume auto`) in another way, are each given their own
verdict, although each ends as the continuous run does: the restart starts over from update 0, replays from an older
checkpoint, or the signal is taken as a snapshot and the job never requeued. A restart that loses a part:
tests/e2e/test_preempt_script.py; two starts at once are refused: tests/verify/run/launch/test_preempt.py.
"""

import sys

import pytest

from resumeproof.common import losslog
from tests.helpers import TRAINERS
from tests.launchers import through_slurm

pytestmark = pytest.mark.xdist_group("preempt")  # one worker, one cluster
ARGS = ("--steps", "6", "--interrupt-at", "3", "--jobs", "2")


def preempted(tmp_path_factory, cluster, how: str, trainer: str | None = None, *extra: str):
    """A verification with `--preempt how`: its process, verification.json, the preempted trajectory's record and
    its checks by kind."""
    command = () if trainer is None else ("--train-cmd", f"{sys.executable} -B {TRAINERS / trainer}")
    name = f"{how}-{trainer or 'train'}"
    proc, doc, out = through_slurm(tmp_path_factory, name, *ARGS, *command, "--preempt", how, *extra, cluster=cluster)
    record = doc["trajectories"]["preempted"]
    checks = {c["kind"]: c for c in doc["checks"] if c["trajectory"] == "preempted"}
    return proc, doc, record, checks, out


@pytest.mark.parametrize(
    ("how", "signal", "faults"), [("signal", "SIGUSR1", ()), ("requeue", "SIGTERM", ("--faults", "optimizer"))]
)
def test_train_py_preempted_by_slurm_resumes_where_it_stopped_and_passes(
    tmp_path_factory, slurm_cluster, how, signal, faults
):
    proc, doc, record, checks, out = preempted(tmp_path_factory, slurm_cluster, how, None, *faults)
    assert proc.returncode == 0, proc.stdout[-2000:]
    p = record["preemption"]
    assert (p["how"], p["state"], p["restarts"], p["stopped_by"]) == (how, "COMPLETED", 1, signal)
    assert p["requeued_itself"] is (how == "signal") and p["resumed_from"] == [p["stopped_after"]]
    assert p["stopped_after"] >= 3 and [s["restart"] for s in p["starts"]] == ["", "1"]
    assert record["ran_on"]["attempts"] == 2 and record["ran_on"]["job_id"] == p["job_id"]
    assert checks["preemption"]["passed"] and checks["resume"]["passed"]
    assert checks["resume"]["resumed_at"] == p["stopped_after"]
    events = [e for e in losslog.read(out / "preempted" / losslog.NAME)[0] if "event" in e]
    stop, *requeued, again = events[1:]  # the kit's own lines: its stop, its requeue (with --requeue-on), its restart
    assert stop == {"event": "stop", "signal": signal, "step": p["stopped_after"]}
    assert requeued == (
        [{"event": "requeue", "job": p["job_id"], "step": p["stopped_after"]}] if how == "signal" else []
    )
    assert again["event"] == "start" and again["from_step"] == p["stopped_after"]
    said = f"(the job Slurm preempted among them, restarted from update {p['stopped_after']})"
    assert said in doc["verdict"]["line"] and doc["verdict"]["line"].startswith("PASSED: every resume concordant")
    if faults:  # the restarted process gets its fault: the same job, its restart told to omit the optimizer
        fault = doc["faults"]["preempted-fault-optimizer"]
        assert (
            fault["detected"] and fault["diagnosis"]["lost"] == "optimizer" and doc["faults"]["optimizer"]["detected"]
        )
        courses = [c for c in doc["checks"] if c["kind"] == "preemption"]
        assert {c["trajectory"] for c in courses} == {"preempted", "preempted-fault-optimizer"}
        assert all(c["passed"] for c in courses)
        assert doc["verdict"]["line"].endswith("all 2 faults caught (1 of them in a job Slurm restarted)")


@pytest.mark.parametrize(
    ("how", "trainer", "said"),
    [
        ("requeue", "auto_starts_over.py", "was started over: its restart began again from update 0, not from update"),
        ("requeue", "auto_replays.py", "was replayed: its restart went on from update 2, an older checkpoint than"),
        (
            "signal",
            "auto_never_requeues.py",
            "was never requeued: no process stopped on its --signal USR1: it ran on to its end",
        ),
    ],
)
def test_each_broken_course_gets_its_own_verdict_and_its_end_is_judged_too(
    tmp_path_factory, slurm_cluster, how, trainer, said
):
    """Each of these ends as the continuous run does: a verdict read off the end alone would pass all three."""
    proc, doc, _, checks, _ = preempted(tmp_path_factory, slurm_cluster, how, trainer)
    assert proc.returncode == 1
    assert not checks["preemption"]["passed"] and checks["resume"]["passed"]
    line = doc["verdict"]["line"]
    assert line.startswith(f"FAILED: preempted, the job Slurm preempted, {said}"), line
    assert line.endswith("; its run ends as continuous does"), line
