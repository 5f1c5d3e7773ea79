"""train.py, except that rank 1 draws one extra number from its NumPy generator after update 2: a rank whose
global state drifted, which trains on its own noise without any error until the kit's cross-rank check."""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import train  # after the repository is on the path

STEP = train.train_step


def drifting_step(exp, t, *args):
    record = STEP(exp, t, *args)
    if record["step"] == 2 and os.environ.get("RANK") == "1":
        t.generators["numpy"].random()
    return record


train.train_step = drifting_step
train.main()
