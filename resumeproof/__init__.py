"""Shared logic of the resume verifier: checkpoint format, RNG state, tree comparison, processes, report.

Modules that the verifier imports (protocol, fingerprint, compare, trajectories, report) never
import torch, so that the verifier's own start-up stays off the critical path; only the trainer
side (checkpoint, rng, eager) does.
"""
