"""Differential fuzzing of the torch-free weights_only check against torch.load(weights_only=True).

Seeded cases (generated checkpoints, mutated pickles, mutated containers, code-running payloads)
are judged by both sides in worker processes under a memory limit and a timeout (run.py); the
suite runs a slice (tests/common/test_weights_only_fuzz.py), benchmarks/fuzz_weights_only.py the full run.
"""
