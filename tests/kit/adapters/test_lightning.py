"""The Lightning adapter (kit/adapters/lightning.py): a data position its loader does not save cannot be omitted,
and the user-level fix refuses a checkpoint without the generators it restores."""

import pytest

pytestmark = pytest.mark.xdist_group("adapters-lightning")  # one worker for the lightning example's runs (conftest.py)


def test_lightning_refuses_to_omit_a_data_position_its_loader_does_not_save(interrupted, resumed):
    proc, _ = resumed(interrupted("lightning"), "lightning", "--omit=data")
    last = proc.stderr.strip().splitlines()[-1]
    assert proc.returncode != 0 and "--omit=data: the train DataLoader saves no position" in last, proc.stderr[-2000:]


def test_a_fixed_lightning_resume_refuses_a_checkpoint_without_the_generators_it_restores(interrupted, resumed):
    fixed, _ = resumed(interrupted("lightning"), "lightning", "--fix", "user")
    assert fixed.returncode != 0  # a checkpoint without GlobalRngState's state cannot be resumed with it
    assert "GlobalRngState" in fixed.stderr
