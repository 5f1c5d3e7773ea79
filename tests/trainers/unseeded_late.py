"""Fault: from update 5 on, noise from a generator seeded per run (its folder's name): the trainer differs from itself.

A correct torch-free trainer otherwise (tests/trainers/_scalar_loop.py). Interrupted before update 5,
every interrupted history is the continuous run's prefix, and the resume differs from update 5 on: the
verdict is "not deterministic" (exit 1), and no part may be blamed. With `--repeat` the repeat is
there from the start, and must be read.
"""

from _scalar_loop import Bend, run

run(Bend(unseeded_from=5))
