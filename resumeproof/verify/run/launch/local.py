"""The default launcher: each command a process on this machine, in its own session so that a timeout kills the
trainer and anything it started."""

import os
import signal
import socket
import subprocess
from pathlib import Path

from resumeproof.verify.run.launch.seam import LOCAL, Launched, LaunchError, Placement


class Local:
    """Runs each command as a child process of the verifier."""

    def launch(self, argv: list[str], log: Path, timeout: float, env: dict[str, str] | None) -> Launched:
        with open(log, "ab") as out:
            try:
                proc = subprocess.Popen(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    env=env,
                )
            except OSError as err:  # no such command, not executable, ...
                raise LaunchError(f"cannot start {argv[0]!r}: {err.strerror or err}") from None
            try:
                code = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)  # its own session: the trainer and its children
                proc.wait()
                raise LaunchError(f"timed out after {timeout:g} s and was killed (log: {log})") from None
        devices = (env if env is not None else os.environ).get("CUDA_VISIBLE_DEVICES")
        return Launched(
            code, Placement(launcher=LOCAL, host=socket.gethostname(), job_id=None, attempts=1, devices=devices)
        )

    def close(self) -> None:
        """Nothing to end: `launch` returns only once its process has."""
