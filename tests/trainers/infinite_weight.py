"""Fault: a weight of the model is -inf, the same in every run: not a usable output, however exactly it resumes.

A correct torch-free trainer otherwise (tests/trainers/_scalar_loop.py): the loss never reads the masked
weight, so every history, draw and eval is finite and every resume is exact. The model's state holds the
infinity in every run (`state.model.w[1]`), where the comparison would match it: the verifier must fail
the output as not usable (exit 1), name the path, and blame no part.
"""

import math

from _scalar_loop import Bend, run

run(Bend(masked=-math.inf))
