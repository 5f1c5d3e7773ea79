"""Fault: the resume restores no random state at all; otherwise exactly the bundled train.py.

Every resume runs as if `--omit-rng-restore` were given, so the full resume and the resume
without RNG restore compute exactly the same thing. Both differ from the continuous run, and the
verifier must say why: the checkpoint's random state is never restored (exit 1).
"""

import runpy
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TRAIN = REPO / "train.py"

extra = ["--omit-rng-restore"] if "--resume" in sys.argv and "--omit-rng-restore" not in sys.argv else []
sys.argv = [str(TRAIN), *sys.argv[1:], *extra]
sys.path[0] = str(REPO)  # as `python -B train.py` sees it: the script's directory first
runpy.run_path(str(TRAIN), run_name="__main__")
