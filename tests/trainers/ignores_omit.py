"""Fault in the fault matrix itself: `--omit=PART` is accepted and silently dropped.

The bundled train.py, with every `--omit` dropped from its command line before it runs, so a
"resume without PART" is in truth a full resume, and its summary does not echo the part. The
verifier must refuse to count such a run as a fault that was run (exit 2), never report it caught.
"""

import sys

from _protocol_files import run_train_py

run_train_py([arg for arg in sys.argv[1:] if not arg.startswith("--omit=")])
