"""Fault: the checkpoint written at the preemption is lost, so a job Slurm restarted replays from an older one. It
writes a generation every 2 updates of its own; on a restart (SLURM_RESTART_COUNT set) what the stop wrote (its newest
generation and the final checkpoint) is gone, as where the save on the signal did not finish within KillWait, and
`--resume auto` goes on from the generation before.
The replay itself is exact: only the course of the job says the preemption saved nothing
(tests/e2e/test_preempt.py); otherwise exactly the bundled train.py.
"""

import os
import sys
from pathlib import Path

from _protocol_files import run_train_py

if os.environ.get("SLURM_RESTART_COUNT"):
    run = Path(sys.argv[sys.argv.index("--output") + 1])
    newest = max(run.glob("step_*.pt"), default=None)
    for written in [*(run.glob(f"{newest.name}*") if newest else ()), *run.glob("checkpoint.pt*")]:
        written.unlink()
run_train_py([*sys.argv[1:], "--checkpoint-every", "2"])
