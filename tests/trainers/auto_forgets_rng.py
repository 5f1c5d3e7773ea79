"""Fault on the self-resume path only: `--resume auto` (a job Slurm restarted, resuming from its own folder) restores
no random state; a resume from a named checkpoint is exactly the bundled train.py's.

Every resume the verifier starts itself passes; only the job Slurm preempts and restarts (--preempt) differs, from
its first resumed update, and its diagnosis must name the random state (tests/e2e/test_preempt.py).
"""

import sys

from _protocol_files import run_train_py

auto = sys.argv[sys.argv.index("--resume") + 1] == "auto" if "--resume" in sys.argv else False
run_train_py([*sys.argv[1:], *(["--omit-rng-restore"] if auto else [])])
