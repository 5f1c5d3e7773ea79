"""A deliberate change, not a fault: every resume pivots to lr 0.01 (`train.py --pivot lr=0.01`).

Such a run is another run from the pivot on; the verifier must never call it concordant with the
unchanged continuous run (exit 1), however legitimate the pivot.
"""

import sys

from _protocol_files import run_train_py

extra = ["--pivot", "lr=0.01"] if "--resume" in sys.argv else []
run_train_py([*sys.argv[1:], *extra])
