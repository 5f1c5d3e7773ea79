"""Each command one Slurm job through submitit: no retry, no requeue, every start counted, cancelled on any exit.

On one node the job runs `job.run` once, in the batch script (no srun). On several (--slurm-nodes N) it runs
`every_node`, one task per node through srun: the command once per node, with torchrun's rendezvous (PET_NNODES,
PET_NODE_RANK, PET_MASTER_ADDR, PET_MASTER_PORT, the variables torchrun reads for its flags) from the allocation, so
that `torchrun --nproc-per-node 8 train.py` is one run across the nodes. The trajectories' outputs, logs and the
observer's records lie under --output, which every node must see (docs/cluster.md).
"""

import os
import re
import shutil
import socket
import subprocess
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import submitit

from resumeproof.verify.run.launch import job, preempt
from resumeproof.verify.run.launch.seam import (
    SLURM,
    SUBMITIT_CLUSTER_ENV,
    Launch,
    Launched,
    LaunchError,
    Placement,
    Preempt,
)

POLL = 0.2  # seconds between two looks for a job's result
LOOK = 2.0  # seconds between two looks at squeue, for a job that ended without writing its result
# squeue's states of a job that will not run again (a requeued job is PENDING again, not one of these)
ENDED = {"BOOT_FAIL", "CANCELLED", "COMPLETED", "DEADLINE", "FAILED", "NODE_FAIL", "OUT_OF_MEMORY", "TIMEOUT"}
# The rendezvous port, the same on every node without talking: derived from the job id as Lightning's SLURMEnvironment
# does (15000 + its last four digits), so that two jobs on one first node rarely pick the same.
PORT_BASE = 15000


class Slurm:
    """Submits each command as one job and waits for it; `close` cancels every job still known."""

    def __init__(self, launch: Launch, folder: Path, executor: Any = None) -> None:
        self.folder = folder
        self.nodes = launch.nodes
        self.executor = executor or _executor(launch, folder)
        cluster = self.executor.cluster if hasattr(self.executor, "cluster") else SLURM
        # verification.json says so when the jobs ran as processes here (the tests), not on a cluster
        self.name = SLURM if cluster == SLURM else f"{SLURM} (submitit's {cluster} executor)"
        self._jobs: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._preempter = preempt.Preempter(launch, folder)

    def preempted(
        self, argv: list[str], log: Path, output: Path, timeout: float, env: dict[str, str] | None, plan: Preempt
    ) -> preempt.Preempted:
        """`argv` as one requeueable job, preempted as `plan` asks and followed to its end (preempt.py)."""
        return self._preempter.run(argv, log, output, timeout, env, plan)

    def launch(self, argv: list[str], log: Path, timeout: float, env: dict[str, str] | None) -> Launched:
        starts = self.folder / f"{uuid.uuid4().hex}.starts"
        if self._closed.is_set():
            raise LaunchError("cancelled before it was submitted")
        try:
            made = None if env is None else job.changes(env, dict(os.environ))  # onto the node's environment
            run = job.run if self.nodes == 1 else every_node
            submitted = self.executor.submit(run, argv, str(log), made, str(starts))
        except (submitit.core.utils.FailedSubmissionError, OSError) as err:
            raise LaunchError(f"could not be submitted: {_first_line(err)}") from None
        with self._lock:
            self._jobs[submitted.job_id] = submitted
        try:
            code = self._wait(submitted, starts, timeout)
        finally:
            with self._lock:
                self._jobs.pop(submitted.job_id, None)
        return Launched(code, self._placement(str(submitted.job_id), starts))

    def _placement(self, job_id: str, starts: Path) -> Placement:
        """Where the job ran: each node's last start (hosts and Slurm's node names joined by commas), the first node's
        devices, and the most starts of one node (a requeue starts them all again)."""
        ran = [job.started(node_starts(str(starts), node)) for node in range(self.nodes)]
        last = [each[-1] for each in ran if each]
        hosts = ",".join(start.host for start in last) or None
        nodes = ",".join(start.node for start in last if start.node) or None
        devices = last[0].devices if last else ""
        attempts = max(len(each) for each in ran)
        return Placement(
            launcher=self.name, host=hosts, job_id=job_id, attempts=attempts, devices=devices or None, node=nodes
        )

    def close(self) -> None:
        """Cancel every job submitted and not yet finished (Ctrl-C, an error, the end of a run)."""
        self._closed.set()
        self._preempter.close()
        with self._lock:
            running = list(self._jobs.values())
        for submitted in running:
            submitted.cancel(check=False)

    def _wait(self, submitted: Any, starts: Path, timeout: float) -> int:
        """The job's exit code once it is done; cancelled, with the scheduler's word, when it takes too long."""
        deadline = time.monotonic() + timeout
        looked = time.monotonic()
        while not submitted.done():
            if self.name == SLURM and time.monotonic() - looked > LOOK:
                looked = time.monotonic()
                ended = _ended(str(submitted.job_id))
                if ended is not None and not submitted.done():  # the result is written before the job ends
                    said = f"ended {ended} without a result (its output: {self.folder}/{submitted.job_id}_0_log.err)"
                    raise LaunchError(f"job {submitted.job_id} {said}")
            if self._closed.is_set():  # cancelled here too: `close` may have run before this job was registered
                submitted.cancel(check=False)
                raise LaunchError(f"job {submitted.job_id} cancelled")
            if time.monotonic() > deadline:
                said = _reason(submitted)  # before cancelling: afterwards the scheduler says "cancelled"
                submitted.cancel(check=False)
                if not starts.exists():
                    raise LaunchError(f"job {submitted.job_id} never started within --timeout {timeout:g} s: {said}")
                raise LaunchError(f"job {submitted.job_id} timed out after {timeout:g} s and was cancelled")
            time.sleep(POLL)
        try:
            codes = [int(code) for code in submitted.results()] if self.nodes > 1 else [int(submitted.result())]
            return next((code for code in codes if code), 0)  # the first node's failure, else success
        except (submitit.core.utils.UncompletedJobError, submitit.core.utils.FailedJobError) as err:
            raise LaunchError(f"job {submitted.job_id} failed: {_first_line(err)}") from None


def _executor(launch: Launch, folder: Path) -> Any:
    """submitit's executor for `launch`: Slurm, or (SUBMITIT_CLUSTER_ENV=local, the tests) processes here."""
    cluster = os.environ.get(SUBMITIT_CLUSTER_ENV) or "slurm"
    # A requeued or retried trajectory would be a resumed one nobody asked for: none, wherever the scheduler allows.
    try:
        executor = submitit.AutoExecutor(
            folder=folder, cluster=cluster, slurm_max_num_timeout=0, local_max_num_timeout=0
        )
    except RuntimeError as err:  # submitit's word for a machine without Slurm's commands
        raise LaunchError(f"--launcher slurm: no Slurm cluster to submit to from here: {err}") from None
    if cluster == "local":  # one machine: each task stands in for a node (the tests' multi-node rendezvous)
        executor.update_parameters(tasks_per_node=launch.nodes)
    else:
        executor.update_parameters(nodes=launch.nodes, tasks_per_node=1)
    if launch.gpus_per_node:
        executor.update_parameters(gpus_per_node=launch.gpus_per_node)
    if launch.minutes is not None:
        executor.update_parameters(timeout_min=launch.minutes)
    if cluster == "slurm":
        extra = {"no_requeue": True}  # sbatch --no-requeue: no requeue after a node failure or a preemption
        # srun only for several nodes: it starts one task per node; on one, the batch script runs the job itself
        executor.update_parameters(slurm_use_srun=launch.nodes > 1, slurm_additional_parameters=extra)
        if launch.partition is not None:
            executor.update_parameters(slurm_partition=launch.partition)
    return executor


def every_node(argv: list[str], log: str, made: job.Changes | None, starts: str) -> int:
    """What each task of a job on several nodes runs: `job.run` with torchrun's rendezvous from the allocation (one
    task per node, so the task's rank is the node's), its starts counted in the node's own file. The rendezvous
    address is the first node's as Slurm reaches it (`node_address`); one that does not resolve here is said in the
    log in one line and the node runs nothing (else every rank waits out torchrun's rendezvous time-out)."""
    here = submitit.JobEnvironment()
    first = here.hostnames[0]
    address = node_address(first)
    try:
        socket.getaddrinfo(address, None)
    except socket.gaierror as err:
        with open(log, "a") as out:
            said = f"the first node's address {address!r} (node {first}) does not resolve on {here.hostname}"
            out.write(f"--slurm-nodes {here.num_tasks}: {said}: {err.strerror}\n")
        return job.CANNOT_START
    rendezvous = {
        "PET_NNODES": str(here.num_tasks),
        "PET_NODE_RANK": str(here.global_rank),
        "PET_MASTER_ADDR": address,
        "PET_MASTER_PORT": str(PORT_BASE + int(str(here.raw_job_id)[-4:])),
    }
    set_, removed = made if made is not None else ({}, ())
    return job.run(argv, log, ({**set_, **rendezvous}, removed), node_starts(starts, here.global_rank))


def node_address(node: str) -> str:
    """The address Slurm reaches `node` at: its `NodeAddr` (`scontrol show node`), since a node's name need not
    resolve (a cluster's names are often Slurm's own); the name itself where scontrol does not know the node (submitit's
    local executor: this machine's host name)."""
    scontrol = shutil.which("scontrol")
    if scontrol is None:
        return node
    try:
        argv = [scontrol, "show", "node", node, "--oneliner"]
        shown = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return node
    found = re.search(r"\bNodeAddr=(\S+)", shown.stdout)
    return found.group(1) if shown.returncode == 0 and found else node


def node_starts(starts: str, node: int) -> str:
    """The file a node's starts are counted in: the job's own for the first node."""
    return starts if node == 0 else f"{starts}.node-{node}"


def _ended(job_id: str) -> str | None:
    """Slurm's state of a job that has ended, from squeue (submitit asks sacct, which a cluster without accounting
    cannot answer: it would wait for a result that never comes); None while it is queued, running or requeued, or
    where squeue cannot say."""
    squeue = shutil.which("squeue")
    if squeue is None:
        return None
    try:
        shown = subprocess.run(
            [squeue, "-h", "-t", "all", "-j", job_id, "-o", "%T"], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if shown.returncode != 0 and "Invalid job id" in shown.stderr:
        return "and left the queue"
    states = set(shown.stdout.split())
    return "/".join(sorted(states)) if states and states <= ENDED else None


def _reason(submitted: Any) -> str:
    """What the scheduler says of a job that has not finished: its state, and Slurm's reason when squeue has one."""
    said = f"state {submitted.state}"
    squeue = shutil.which("squeue")
    if squeue is None:
        return said
    try:
        reason = subprocess.run(
            [squeue, "-h", "-j", str(submitted.job_id), "-o", "%r"], capture_output=True, text=True, timeout=30
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired) as err:
        return f"{said} (squeue: {err})"
    return f"{said}, reason {reason}" if reason else said


def _first_line(err: BaseException) -> str:
    """The line of submitit's message that says what went wrong (it quotes the job's traceback and its log's path)."""
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    said = [line for line in lines if "Error:" in line or "error:" in line]
    return (said or lines or [type(err).__name__])[-1]
