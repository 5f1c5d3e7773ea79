"""Judging what the trajectories left: summaries and observer records, the checks, the diagnosis."""
