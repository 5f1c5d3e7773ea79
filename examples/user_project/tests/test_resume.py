"""The training script resumes exactly: proven with the resumeproof pytest plugin's fixture."""

from pathlib import Path

TRAIN = f"python -B {Path(__file__).resolve().parent.parent / 'train.py'}"


def test_the_resume_is_exact_mid_epoch(resume_verification):
    result = resume_verification(TRAIN)
    assert result, result.explanation


def test_the_resume_is_exact_at_every_epoch_boundary_and_every_part_matters(resume_verification):
    result = resume_verification(TRAIN, steps=8, interrupt_at="epochs", faults="optimizer,data")
    assert result, result.explanation
    assert result.verification.interrupt_at == (2, 4, 6)  # read off the history: an epoch is 4 updates
