"""Each command one Ray job through the Jobs API: no retry, every start counted, stopped on any exit.

The job's entrypoint is job.py run as a file by this verifier's Python (`python .../job.py LOG STARTS [UNSET...] --
ARGV...`): it appends the command's output to the trajectory's log and each start to a starts file under --output,
which the verifier and every node must see at the same path, as they must see this Python (docs/cluster.md).
The variables the trajectory's environment sets travel as the runtime environment's `env_vars`; Ray sets the job's
devices (CUDA_VISIBLE_DEVICES) from `entrypoint_num_gpus`.
"""

import os
import shlex
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from ray.job_submission import JobStatus, JobSubmissionClient

from resumeproof.verify.run.launch import job
from resumeproof.verify.run.launch.seam import RAY, RAY_ADDRESS_ENV, Launch, Launched, LaunchError, Placement

POLL = 0.2  # seconds between two looks at a job's status
STOPPED_WITHIN = 30.0  # seconds `close` waits for a stopped job to end (Ray kills its entrypoint after a few)


class Ray:
    """Submits each command as one job to a Ray cluster and follows it; `close` stops every job still out."""

    def __init__(self, launch: Launch, folder: Path, client: Any = None) -> None:
        self.asks = launch
        self.folder = folder
        self.address = launch.ray_address or os.environ.get(RAY_ADDRESS_ENV) or ""
        self.client = client or _client(self.address)
        folder.mkdir(parents=True, exist_ok=True)  # the starts files, under --output
        self._jobs: set[str] = set()
        self._lock = threading.Lock()
        self._closed = threading.Event()

    def launch(self, argv: list[str], log: Path, timeout: float, env: dict[str, str] | None) -> Launched:
        if self._closed.is_set():
            raise LaunchError("cancelled before it was submitted")
        starts = self.folder / f"{uuid.uuid4().hex}.starts"
        set_, removed = job.changes(env, dict(os.environ)) if env is not None else ({}, ())
        entry = [sys.executable, "-B", job.__file__, str(log), str(starts), *removed, "--", *argv]
        sid = self._call(
            "submit",
            lambda: self.client.submit_job(
                entrypoint=shlex.join(entry),
                entrypoint_num_cpus=self.asks.cpus_per_job,
                entrypoint_num_gpus=self.asks.gpus_per_job,
                runtime_env={"env_vars": set_},
            ),
        )
        with self._lock:
            self._jobs.add(sid)
        try:
            code, node = self._wait(sid, starts, timeout)
        finally:
            with self._lock:
                self._jobs.discard(sid)
        ran = job.started(str(starts))
        host, devices = (ran[-1].host, ran[-1].devices) if ran else (None, "")
        where = Placement(launcher=RAY, host=host, job_id=sid, attempts=len(ran), devices=devices or None, node=node)
        return Launched(code, where)

    def close(self) -> None:
        """Stop every job submitted and not yet ended (Ctrl-C, an error, the end of a run), and wait for them to end."""
        self._closed.set()
        with self._lock:
            out = list(self._jobs)
        for sid in out:
            self._stop(sid)
        deadline = time.monotonic() + STOPPED_WITHIN
        while out and time.monotonic() < deadline:
            out = [sid for sid in out if not self._ended(sid)]
            time.sleep(POLL)

    def _wait(self, sid: str, starts: Path, timeout: float) -> tuple[int, str | None]:
        """The job's exit code once it has ended, and the Ray node its entrypoint ran on (several nodes may share a
        host); stopped, with Ray's word, when it takes too long."""
        deadline = time.monotonic() + timeout
        while True:
            info = self._call("follow", lambda: self.client.get_job_info(sid))
            if info.status.is_terminal():
                return _exit_code(sid, info), info.driver_node_id or None
            if self._closed.is_set():  # `close` may have run before this job was registered
                self._stop(sid)
                raise LaunchError(f"job {sid} stopped")
            if time.monotonic() > deadline:
                self._stop(sid)
                if info.status == JobStatus.PENDING and not starts.exists():
                    said = f"status {info.status.value}" + (f": {info.message}" if info.message else "")
                    raise LaunchError(f"job {sid} never started within --timeout {timeout:g} s: {said}")
                raise LaunchError(f"job {sid} timed out after {timeout:g} s and was stopped")
            time.sleep(POLL)

    def _stop(self, sid: str) -> None:
        try:
            self.client.stop_job(sid)
        except (OSError, RuntimeError) as err:  # the cluster gone: nothing left to stop there; said, not hidden
            print(f"could not stop Ray job {sid} at {self.address or 'the local cluster'}: {err}", file=sys.stderr)

    def _ended(self, sid: str) -> bool:
        """Whether a stopped job is through. Ray cannot stop a job it has not scheduled (its stop waits in the queue
        with it): a PENDING job counts as ended, it never ran."""
        try:
            status = self.client.get_job_status(sid)
        except (OSError, RuntimeError):  # the cluster gone: its jobs with it
            return True
        return bool(status.is_terminal() or status == JobStatus.PENDING)

    def _call(self, doing: str, call: Any) -> Any:
        """`call()`, its failures one line naming the cluster's address (`doing`: what the verifier asked of Ray)."""
        try:
            return call()
        except (OSError, RuntimeError) as err:  # requests' errors are OSErrors; Ray's HTTP answers RuntimeErrors
            where = self.address or "the local cluster"
            raise LaunchError(f"--launcher ray: could not {doing} a job at {where}: {_first_line(err)}") from None


def _client(address: str) -> Any:
    """A client of the cluster at `address` ("": Ray's own default, a cluster started on this machine)."""
    try:
        return JobSubmissionClient(address or None)
    except (OSError, RuntimeError, ValueError) as err:  # ConnectionError: nothing answers there
        where = address or "this machine (no --ray-address, no RAY_ADDRESS)"
        raise LaunchError(f"--launcher ray: no Ray cluster at {where}: {_first_line(err)}") from None


def _exit_code(sid: str, info: Any) -> int:
    """The entrypoint's exit code; a job that ended without one (stopped by someone else, its node lost) is an error
    with Ray's word."""
    if info.driver_exit_code is not None:
        return int(info.driver_exit_code)
    if info.status == JobStatus.SUCCEEDED:
        return 0
    said = f": {_first_line(info.message)}" if info.message else ""
    raise LaunchError(f"job {sid} ended {info.status.value}{said}")


def _first_line(err: object) -> str:
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    return lines[0] if lines else type(err).__name__
