"""`verify --observe --launcher slurm --preempt signal|requeue` on a real two-node Slurm (tests/slurm_cluster.py):
an unmodified script that resumes from its own folder, preempted by Slurm after update k and restarted, is judged
from the observer's records of both starts.

A plain loop that saves every iteration and stops (and on the job's signal requeues) passes both ways; each of its
restart bugs gets its own verdict: the generator not set back, the epoch begun again, the iteration count one
behind its weights, a restart in a new folder (a start over), a signal that stops the run and never requeues it. A
Lightning script relying on its own auto-requeue, with the generators saved and a stateful loader, gets what its hpc
checkpoint still loses (docs/audit.md): the count of updates, one behind the weights it saves inside the handler (L4).
"""

import sys

import pytest

from tests.helpers import TRAINERS
from tests.launchers import through_slurm

pytestmark = pytest.mark.xdist_group("preempt-script")  # one worker, one cluster
LOOP, LIGHTNING = TRAINERS / "self_resuming_script.py", TRAINERS / "lightning_requeue_script.py"


def verified(tmp_path_factory, cluster, how: str, name: str, *bug: str, lightning: str | None = None, steps: int = 6):
    """A verification of the loop (or the Lightning script, with its flags `lightning`) preempted `how` after update
    3, `bug` on its --train-cmd alone (what a restarted job runs): its process, verification.json, and the preempted
    job's checks by kind."""
    script = f"{sys.executable} -B {LOOP}" if lightning is None else f"{sys.executable} -B {LIGHTNING} {lightning}"
    if lightning is not None:
        train, resume = f"{script} --steps {{steps}} --out {{run}}", "--ckpt {checkpoint}"
        checkpoint = "{run}/step={step}.ckpt"
    else:
        train, resume, checkpoint = (
            f"{script} --iters {{steps}} --out {{run}}",
            "--resume {checkpoint}",
            "{run}/ckpt_{step}.pt",
        )
    args = ["--observe", "--steps", str(steps), "--interrupt-at", "3", "--jobs", "2", "--preempt", how]
    args += ["--train-cmd", " ".join([train, *bug]), "--resume-cmd", f"{train} {resume}", "--checkpoint", checkpoint]
    proc, doc, _ = through_slurm(tmp_path_factory, name, *args, cluster=cluster)
    checks = {c["kind"]: c for c in doc["checks"] if c["trajectory"] == "preempted"}
    return proc, doc, checks


@pytest.mark.parametrize("how", ["signal", "requeue"])
def test_a_self_resuming_loop_preempted_by_slurm_passes(tmp_path_factory, slurm_cluster, how):
    requeue_on = ("--requeue-on", "USR1") if how == "signal" else ()
    proc, doc, checks = verified(tmp_path_factory, slurm_cluster, how, f"loop-{how}", *requeue_on)
    assert proc.returncode == 0, proc.stdout[-2000:]
    p = doc["trajectories"]["preempted"]["preemption"]
    assert (p["restarts"], p["stopped_after"], p["resumed_from"]) == (1, 3, [3])
    assert checks["preemption"]["passed"] and checks["resume"]["passed"] and checks["resume"]["resumed_at"] == 3
    assert "(the job Slurm preempted among them, restarted from update 3)" in doc["verdict"]["line"]


@pytest.mark.parametrize(
    ("how", "bug", "lost"),
    [("signal", "rng", "rng-torch"), ("requeue", "epoch", "data"), ("requeue", "counter", "progress")],
)
def test_a_restart_that_loses_a_part_is_failed_naming_it(tmp_path_factory, slurm_cluster, how, bug, lost):
    requeue_on = ("--requeue-on", "USR1") if how == "signal" else ()
    proc, doc, checks = verified(tmp_path_factory, slurm_cluster, how, f"loop-{bug}", *requeue_on, "--bug", bug)
    assert proc.returncode == 1
    assert checks["preemption"]["passed"] and not checks["resume"]["passed"]
    assert checks["resume"]["diagnosis"]["lost"] == lost
    assert {c["trajectory"] for c in doc["checks"] if not c["passed"]} == {"preempted"}  # its own resumes pass
    assert doc["verdict"]["line"].endswith(f"; lost {lost}")


@pytest.mark.parametrize(
    ("how", "bug", "said"),
    [
        ("signal", "new-folder", "was started over: its restart began again from update 0, not from update 3"),
        ("signal", "no-requeue", "was never requeued: its process stopped after update 3 and nothing requeued"),
    ],
)
def test_a_broken_course_is_read_off_the_records_of_both_starts(tmp_path_factory, slurm_cluster, how, bug, said):
    name = f"loop-{bug}"
    proc, doc, checks = verified(tmp_path_factory, slurm_cluster, how, name, "--requeue-on", "USR1", "--bug", bug)
    assert proc.returncode == 1 and not checks["preemption"]["passed"]
    assert doc["verdict"]["line"].startswith(f"FAILED: preempted, the job Slurm preempted, {said}")


def test_lightnings_auto_requeue_saves_its_step_count_one_behind_the_weights(tmp_path_factory, slurm_cluster):
    """L4: with the generators saved and a stateful loader (L1 and L2 closed), the hpc checkpoint Lightning writes
    inside its SIGUSR1 handler, during the optimizer step, holds the weights after it and the count before it: the
    restart makes one update more than was left, each one the continuous run's."""
    proc, doc, checks = verified(tmp_path_factory, slurm_cluster, "signal", "lightning-fixed", lightning="--fixed")
    assert proc.returncode == 1
    assert checks["resume"]["first_mismatch"] == "updates: ran 4 where 3 were left"
    assert (
        checks["resume"]["diagnosis"]["lost"] == "progress" and checks["resume"]["diagnosis"]["rule"] == "update-count"
    )
    assert {c["trajectory"] for c in doc["checks"] if not c["passed"]} == {"preempted"}  # its own resumes pass
