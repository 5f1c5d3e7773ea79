"""The Accelerate adapter (kit/adapters/accelerate.py): a resume whose generators `load_state` silently skipped is
refused, and one that omits every generator needs none."""

import pytest

from resumeproof.common import manifest

pytestmark = pytest.mark.xdist_group(
    "adapters-accelerate"
)  # one worker for the accelerate example's runs (conftest.py)


@pytest.mark.parametrize("damage", ["missing", "unreadable"])
def test_accelerate_refuses_a_resume_whose_generators_load_state_silently_skipped(
    interrupted, damage, resumed, signed_copy
):
    checkpoint = signed_copy(interrupted("accelerate"))
    rng_file = checkpoint / "random_states_0.pkl"
    if damage == "missing":
        rng_file.unlink()
    else:
        rng_file.write_bytes(b"not a checkpoint")
    manifest.write(checkpoint)  # a consistent folder: only the generators are wrong
    proc, out = resumed(checkpoint, "accelerate")
    assert proc.returncode != 0 and not (out / "summary.json").exists()
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("accelerate_example.py: error:") and "random_states_0.pkl" in last, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    assert ("missing" if damage == "missing" else "did not restore") in last


def test_accelerate_resumes_without_the_generators_when_every_rng_part_is_omitted(interrupted, resumed, signed_copy):
    checkpoint = signed_copy(interrupted("accelerate"))
    (checkpoint / "random_states_0.pkl").unlink()
    manifest.write(checkpoint)
    proc, _ = resumed(checkpoint, "accelerate", "--omit-rng-restore")
    assert proc.returncode == 0, proc.stderr[-2000:]
