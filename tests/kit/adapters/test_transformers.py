"""The transformers adapter (kit/adapters/transformers.py): a resume without the Trainer's rng file is refused."""

import pytest

from resumeproof.common import manifest

pytestmark = pytest.mark.xdist_group(
    "adapters-transformers"
)  # one worker for the transformers example's runs (conftest.py)


def test_transformers_refuses_a_resume_without_its_rng_file(interrupted, resumed, signed_copy):
    checkpoint = signed_copy(interrupted("transformers"))
    (checkpoint / "rng_state.pth").unlink()
    manifest.write(checkpoint)
    proc, _ = resumed(checkpoint, "transformers")
    last = proc.stderr.strip().splitlines()[-1]
    assert proc.returncode != 0 and "rng_state.pth is missing" in last, proc.stderr[-2000:]
