"""The plan: which trajectories a verification runs, and what each is expected to show."""
