"""The reference trainer, but rank 1 draws one extra number from its NumPy generator after update 2: a rank whose
global state drifted, which trains on its own noise without any error until the kit's cross-rank check."""

import os

from resumeproof.reference import train

STEP = train.train_step


def drifting_step(exp, t, *args):
    record = STEP(exp, t, *args)
    if record["step"] == 2 and os.environ.get("RANK") == "1":
        t.generators["numpy"].random()
    return record


train.train_step = drifting_step
train.main()
