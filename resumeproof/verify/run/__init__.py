"""Running the trajectories as fresh processes, and accepting what each left (summary, checkpoint, records)."""
