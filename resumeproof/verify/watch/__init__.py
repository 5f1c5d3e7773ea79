"""`resumeproof watch --report`: a watched run's resume history, read off its resumes.jsonl (common/watching.py)."""
