"""Fixtures shared by the whole suite: one trained checkpoint reused by many tests."""

from pathlib import Path

import pytest

from tests.helpers import trained


@pytest.fixture(scope="session")
def interrupted_run(tmp_path_factory) -> Path:
    """A train.py run of 5 steps (mid-epoch): its directory holds checkpoint.pt, .sha256, summary.json."""
    return trained(tmp_path_factory, "interrupted", 5)


@pytest.fixture(scope="session")
def continuous_run(tmp_path_factory) -> Path:
    """A train.py run of 10 steps: across the epoch boundary at 6."""
    return trained(tmp_path_factory, "continuous", 10)
