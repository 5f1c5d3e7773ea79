"""Fault: Adam's state is not restored on resume; otherwise exactly the bundled train.py.

`torch.optim.Adam.load_state_dict` becomes a no-op, so a resumed run continues with fresh
moments (and the param groups' initial lr) while model, scheduler, data order and generators are
restored. The full resume is not concordant with the continuous run: verifier exit 1.
"""

import os
import runpy
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TRAIN = REPO / "train.py"

# What train.py sets before torch loads; it must hold here too, since torch is imported first.
os.environ.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")

import torch  # noqa: E402

torch.optim.Adam.load_state_dict = lambda self, state_dict: None  # the fault

sys.argv[0] = str(TRAIN)
sys.path[0] = str(REPO)  # as `python -B train.py` sees it: the script's directory first
runpy.run_path(str(TRAIN), run_name="__main__")
