"""The reference trainer, except that one rank (RESUMEPROOF_TEST_RANK, default 1) is SIGKILLed after its third update
(or stopped, hung rather than dead, with RESUMEPROOF_TEST_SIGNAL=SIGSTOP)."""

import os
import signal

from resumeproof.reference import train

STEP, RANK = train.train_step, os.environ.get("RESUMEPROOF_TEST_RANK", "1")
SIGNAL = signal.Signals[os.environ.get("RESUMEPROOF_TEST_SIGNAL", "SIGKILL")]


def dying_step(*args):
    record = STEP(*args)
    if record["step"] == 3 and os.environ.get("RANK") == RANK:
        os.kill(os.getpid(), SIGNAL)
    return record


train.train_step = dying_step
train.main()
