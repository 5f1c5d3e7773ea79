"""Where a trajectory's process stands: queued until what it resumes from is accepted, running, then done, failed, or
skipped (what it needed failed). verification.json writes each as its value."""

from enum import StrEnum


class Status(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    SKIPPED = "skipped"
