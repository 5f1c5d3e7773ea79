"""--requeue-on SIG (kit/requeue.py) on a real two-node Slurm (tests/slurm_cluster.py): a job Slurm will not requeue
says so in one line with its checkpoint written, and the flag is refused outside a Slurm job. That a train.py job
preempted either way a cluster does it (its `--signal`, or `scontrol requeue`), restarted by Slurm, ends bit for bit
where the uninterrupted run ends, and that without --requeue-on the signal is a snapshot and the job is never
requeued (the control), is what `verify --preempt` judges: tests/e2e/test_preempt.py.

Each job is the batch script a user writes: `#SBATCH --requeue`, train.py under srun, `--resume auto` in its own
folder. The hold Slurm puts on a requeued job (its BeginTime) is released as soon as the job is pending again.
"""

import shlex
import sys
import time
from pathlib import Path

import pytest

from resumeproof.common import losslog
from tests.helpers import REPO, TRAIN, run_train

pytestmark = pytest.mark.xdist_group("slurm")  # one worker, one cluster
WITHIN = 120.0


def job(cluster, folder: Path, *flags: str, requeue: bool = True) -> str:
    """A batch script as a user writes it, submitted: train.py until step 10 in `folder/run`, resumed in place."""
    train = [
        sys.executable,
        "-B",
        str(TRAIN),
        "--resume",
        "auto",
        "--until-step",
        "10",
        "--output",
        str(folder / "run"),
    ]
    script = folder / "job.sh"
    script.write_text(
        "#!/bin/bash\n"
        f"#SBATCH {'--requeue' if requeue else '--no-requeue'}\n"
        f"#SBATCH --output={folder}/job-%j.out\n#SBATCH --open-mode=append\n"
        f"cd {shlex.quote(str(REPO))}\n"
        f"srun {shlex.join([*train, '--pace', '0.3', *flags])}\n"
    )
    return cluster.command("sbatch", "--parsable", str(script)).strip()


def shown(cluster, job_id: str) -> dict[str, str]:
    """`scontrol show job`'s fields."""
    fields = cluster.command("scontrol", "show", "job", job_id, "--oneliner").split()
    return dict(field.split("=", 1) for field in fields if "=" in field)


def until(condition, what: str) -> None:
    deadline = time.monotonic() + WITHIN
    while not condition():
        assert time.monotonic() < deadline, f"{what} did not happen within {WITHIN:g} s"
        time.sleep(0.1)


def logged(run: Path) -> list[dict]:
    return losslog.read(run / losslog.NAME)[0]


def updated(run: Path, count: int) -> bool:
    return sum("loss" in line for line in logged(run)) >= count


def finished(cluster, job_id: str) -> dict[str, str]:
    """The job's fields once it ended, its requeue's hold released as soon as it was pending again. Once requeued,
    only an end seen after it was pending again counts: a state read in between says nothing of the restart."""
    pending = False

    def ended() -> bool:
        nonlocal pending
        fields = shown(cluster, job_id)
        if fields["JobState"] == "PENDING" and not pending:
            cluster.command("scontrol", "update", f"JobId={job_id}", "StartTime=now")
            pending = True
        requeued = fields["Restarts"] != "0"
        return fields["JobState"] in ("COMPLETED", "FAILED", "CANCELLED") and (pending or not requeued)

    until(ended, f"the end of job {job_id}")
    return shown(cluster, job_id)


def events(run: Path) -> list[dict]:
    return [line for line in logged(run) if "event" in line]


SIGNAL = ("scancel", "--signal=USR1")  # followed by the job id


def preempted(cluster, folder: Path, preempt: tuple[str, ...], *flags: str, requeue: bool = True):
    """A job preempted after its update 3 by `preempt`, followed to its end: its id, its fields, the events of its
    loss.jsonl and its output."""
    job_id = job(cluster, folder, *flags, requeue=requeue)
    until(lambda: updated(folder / "run", 3), "update 3")
    cluster.command(*preempt, job_id)
    fields = finished(cluster, job_id)
    return job_id, fields, events(folder / "run"), (folder / f"job-{job_id}.out").read_text()


def test_a_job_slurm_will_not_requeue_says_so_in_one_line_with_its_checkpoint_written(slurm_cluster, tmp_path):
    job_id, fields, (_, stop, *_), out = preempted(
        slurm_cluster, tmp_path, SIGNAL, "--requeue-on", "USR1", requeue=False
    )
    assert fields["Restarts"] == "0" and f"scontrol requeue {job_id}: " in out, out
    assert f"(the checkpoint of step {stop['step']} is written)" in out
    assert (tmp_path / "run" / f"step_{stop['step']:06d}.pt").is_file()


def test_requeue_on_outside_a_slurm_job_is_one_line_before_anything_is_created(tmp_path, monkeypatch):
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    done = run_train("--steps", "3", "--output", tmp_path / "run", "--requeue-on", "USR1")
    assert done.returncode == 2 and "--requeue-on: not in a Slurm job (SLURM_JOB_ID is unset)" in done.stderr
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("given", ["KILL", "SIGSTOP", "NOPE"])
def test_a_signal_no_process_can_catch_is_refused(tmp_path, given, monkeypatch):
    monkeypatch.setenv("SLURM_JOB_ID", "7")
    done = run_train("--steps", "3", "--output", tmp_path / "run", "--requeue-on", given)
    assert done.returncode == 2 and f"{given!r} is not a signal a process can catch" in done.stderr
    assert not (tmp_path / "run").exists()
