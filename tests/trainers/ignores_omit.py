"""Fault in the fault matrix itself: `--omit=PART` is accepted and silently dropped.

The bundled train.py, with every `--omit` dropped from its command line before it runs, so a
"resume without PART" is in truth a full resume, and its summary does not echo the part. The
verifier must refuse to count such a run as a fault that was run (exit 2), never report it caught.
"""

import runpy
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TRAIN = REPO / "train.py"

args = [arg for arg in sys.argv[1:] if not arg.startswith("--omit=")]
sys.argv = [str(TRAIN), *args]
sys.path[0] = str(REPO)  # as `python -B train.py` sees it: the script's directory first
runpy.run_path(str(TRAIN), run_name="__main__")
