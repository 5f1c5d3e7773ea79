"""`resumeproof fork`: a resume forked from a run that is still going (docs/fork.md)."""
