"""`resumeproof chaos`: kill a long run at random instants, restart it, lose nothing."""
