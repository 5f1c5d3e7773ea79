"""SIGTERM: finish the update, write a checkpoint, stop. SIGUSR1: the same, then carry on. With --requeue-on SIG
(a Slurm job): SIG stops as SIGTERM does, and the job is requeued once the checkpoint is written (kit/requeue.py).

The handlers only record the request; the training loop serves it at the next step boundary.
So a signal that arrives during a checkpoint write is served after that write has completed,
and a second SIGTERM only repeats a request already made: nothing is ever written from a handler.
"""

import signal
import time
from types import FrameType


class Requests:
    def __init__(self, requeue_on: str | None = None) -> None:
        self.stop: str | None = None  # the signal that asked the run to stop
        self.snapshot = False  # a checkpoint was asked for
        self.requeue_on = requeue_on  # the signal ('SIGUSR1') whose stop requeues the Slurm job
        self.terminated = False  # a SIGTERM arrived (a requeue's: Slurm's end of this start)

    def install(self) -> "Requests":
        signal.signal(signal.SIGTERM, self._stop)
        signal.signal(signal.SIGUSR1, self._snapshot)
        if self.requeue_on is not None:
            signal.signal(signal.Signals[self.requeue_on], self._stop)
        return self

    @property
    def requeue(self) -> bool:
        """Whether the stop asked for is the requeue's."""
        return self.stop is not None and self.stop == self.requeue_on

    def take_snapshot(self) -> bool:
        """Whether a checkpoint was asked for; the request is consumed before the write starts, so
        one that arrives during the write is served at the next boundary."""
        asked, self.snapshot = self.snapshot, False
        return asked

    def _stop(self, signum: int, frame: FrameType | None) -> None:
        self.stop = self.stop or signal.Signals(signum).name
        self.terminated = self.terminated or signum == signal.SIGTERM

    def until_terminated(self, within: float) -> bool:
        """Wait (the handler runs in between) for the SIGTERM a requeue sends: taken here, it cannot land while the
        interpreter shuts down, where Python has put the default action back and it would kill the process."""
        deadline = time.monotonic() + within
        while not self.terminated and time.monotonic() < deadline:
            time.sleep(0.05)
        return self.terminated

    def _snapshot(self, signum: int, frame: FrameType | None) -> None:
        self.snapshot = True
