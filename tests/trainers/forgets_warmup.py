"""Fault: the lr warm-up counter is saved but never restored, and it converges by itself.

A correct torch-free trainer otherwise (tests/trainers/_scalar_loop.py). The resumed run warms its lr
up again from the first resumed update: its lr differs from the continuous run's there, which no rule
can pin on a part, and by the end the counter is back at its ceiling, so the warm-up's end state
equals the continuous run's and looks restored. Only a resume with `--omit=warmup`, which reproduces
the failed resume exactly, names it (exit 1, diagnosis `reproduced`: warmup).
"""

from _scalar_loop import Bend, run

run(Bend(restores_warmup=False))
