"""verification.png's numbers: the deviation of each step against the continuous run (the picture itself is
drawn end to end in tests/e2e/test_sweep_e2e.py)."""

import pytest

from resumeproof.verify.report.plot import deviations


def test_plot_deviation_is_per_step_over_loss_and_lr():
    continuous = [{"step": 1, "loss": 1.0, "lr": 0.1}, {"step": 2, "loss": 2.0, "lr": 0.1}]
    other = [{"step": 1, "loss": 1.0, "lr": 0.1}, {"step": 2, "loss": 2.5, "lr": 0.3}]
    assert deviations(continuous, other) == ([1, 2], [0.0, pytest.approx(0.5)])
    assert deviations(continuous, [{"step": 3, "loss": 0.0, "lr": 0.0}]) == ([], [])
