"""Fault: the job's signal is taken as a request for a snapshot, never as a preemption: `--requeue-on` is dropped,
so SIGUSR1 writes a generation and the run goes on to its end in the same job, which Slurm never starts again
(tests/e2e/test_preempt.py). Its end equals the continuous run's; otherwise exactly the bundled train.py.
"""

import sys

from _protocol_files import run_train_py

argv = sys.argv[1:]
if "--requeue-on" in argv:
    at = argv.index("--requeue-on")
    argv = argv[:at] + argv[at + 2 :]
run_train_py(argv)
