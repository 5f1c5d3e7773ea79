"""Fault, in a trainer that differs from itself: noise from a generator seeded per run from update 1 on, and the lr
warm-up counter saved but never restored.

A torch-free trainer otherwise correct (tests/trainers/_scalar_loop.py). Every run differs from every other, so
no trajectory is compared bit for bit; the verdict rests on the restore: a resume of 0 updates reports the warm-up
counter at 0 where the interrupted run saved 3, which names `warmup` (exit 1), while the same trainer restoring
its counter passes within its measured spread (tests/trainers/unseeded_late.py).
"""

from _scalar_loop import Bend, run

run(Bend(restores_warmup=False, unseeded_from=1))
