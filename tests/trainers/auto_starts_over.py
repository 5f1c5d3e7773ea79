"""Fault: a job Slurm restarted starts over. On a restart (SLURM_RESTART_COUNT set) its run folder's checkpoints are
gone, as where each launch cleans or gets a new folder, so `--resume auto` finds nothing and the run begins again
from update 0. Its end equals the continuous run's bit for bit: only the course of the job tells a start-over from a
resume (tests/e2e/test_preempt.py); otherwise exactly the bundled train.py.
"""

import os
import sys
from pathlib import Path

from _protocol_files import run_train_py

if os.environ.get("SLURM_RESTART_COUNT"):
    run = Path(sys.argv[sys.argv.index("--output") + 1])
    for written in [*run.glob("step_*"), *run.glob("checkpoint.pt*"), run / "summary.json"]:
        written.unlink(missing_ok=True)
run_train_py(sys.argv[1:])
