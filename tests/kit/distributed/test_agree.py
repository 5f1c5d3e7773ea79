"""The cross-rank check before a save (kit/distributed/agree.py): ranks whose global state drifted refuse to save."""

from resumeproof.common import protocol
from tests.helpers import TRAINERS, launch, torchrun


def test_ranks_whose_global_state_drifted_refuse_to_save(tmp_path):
    proc = torchrun(launch(2, "--steps", "4", "--output", str(tmp_path / "r"), script=TRAINERS / "rank_drifts.py"))
    assert proc.returncode != 0
    assert "rank 1 holds another rng-numpy than rank 0; refusing to save" in proc.stderr
    assert not (tmp_path / "r" / protocol.CHECKPOINT).exists()
