"""Fault in the fault matrix itself: `--omit PART` is accepted and silently ignored.

The bundled train.py, with every `--omit` dropped from its command line before it runs, so a
"resume without PART" is in truth a full resume. A verifier that trusted the flag would report
the part as covered; it must instead see no divergence and say the protocol is blind to it.
"""

import runpy
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TRAIN = REPO / "train.py"

args = sys.argv[1:]
while "--omit" in args:
    i = args.index("--omit")
    del args[i : i + 2]  # the flag and its PART list
sys.argv = [str(TRAIN), *args]
sys.path[0] = str(REPO)  # as `python -B train.py` sees it: the script's directory first
runpy.run_path(str(TRAIN), run_name="__main__")
