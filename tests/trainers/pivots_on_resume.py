"""A deliberate change, not a fault: every resume pivots to lr 0.01 (`train.py --pivot lr=0.01`).

Such a run is another run from the pivot on; the verifier must never call it concordant with the
unchanged continuous run (exit 1), however legitimate the pivot.
"""

import runpy
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TRAIN = REPO / "train.py"

extra = ["--pivot", "lr=0.01"] if "--resume" in sys.argv else []
sys.argv = [str(TRAIN), *sys.argv[1:], *extra]
sys.path[0] = str(REPO)  # as `python -B train.py` sees it: the script's directory first
runpy.run_path(str(TRAIN), run_name="__main__")
