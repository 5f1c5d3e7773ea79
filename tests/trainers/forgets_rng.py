"""Fault: the resume restores no random state at all; otherwise exactly the bundled train.py.

Every resume runs as if `--omit-rng-restore` were given, so the full resume and the resume
without RNG restore compute exactly the same thing. Both differ from the continuous run, and the
verifier must say why: the checkpoint's random state is never restored (exit 1).
"""

import sys

from _protocol_files import run_train_py

extra = ["--omit-rng-restore"] if "--resume" in sys.argv and "--omit-rng-restore" not in sys.argv else []
run_train_py([*sys.argv[1:], *extra])
