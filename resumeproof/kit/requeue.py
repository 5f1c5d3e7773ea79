"""In a Slurm job: put the job back in the queue once the checkpoint of a stop is written (--requeue-on SIG).

Slurm delivers the job's `--signal` (`#SBATCH --signal=USR1@90`: 90 s before the time limit, or at a
preemption where the cluster is so configured) and leaves it to the job to save and requeue itself, as
Lightning's SLURMEnvironment and submitit do. `scontrol requeue` then ends the job's processes (SIGTERM) and
queues it again; Slurm starts the same batch script, which resumes in place with --resume auto.
"""

import os
import subprocess

from resumeproof.common.errors import ResumeproofError

JOB_ID = "SLURM_JOB_ID"
# Seconds a requeued process waits for the SIGTERM Slurm sends it (at once; KillWait's SIGKILL follows, 30 s by default)
TERM_WITHIN = 30.0


class RequeueError(ResumeproofError):
    """Slurm refused to requeue the job, or could not be asked (a process outside a job is refused by the flag)."""


def requeue(step: int) -> str:
    """`scontrol requeue` this job (the generation of `step` is written); its id. The flag's check (kit/flags.py)
    refused a process outside a Slurm job before anything was created."""
    job = os.environ[JOB_ID]
    try:
        done = subprocess.run(["scontrol", "requeue", job], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise RequeueError(f"scontrol requeue {job}: {err} (the checkpoint of step {step} is written)") from None
    if done.returncode != 0:
        said = done.stderr.strip() or f"exit {done.returncode}"
        raise RequeueError(f"scontrol requeue {job}: {said} (the checkpoint of step {step} is written)")
    return job
