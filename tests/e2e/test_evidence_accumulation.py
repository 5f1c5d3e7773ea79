"""Another number of backward passes in the first resumed update names the progress counter, not the generators the
extra micro-batch moved nor the optimizer: a micro-step counter restored from the update count, and an accumulation
warm-up read from the process's own update index; the control passes (tests/trainers/evidence_accumulation.py)."""

import shlex
import sys

import pytest

from tests.helpers import TRAINERS, verification

pytestmark = pytest.mark.xdist_group("evidence-accumulation")
KIT = f"{shlex.quote(sys.executable)} -B {shlex.quote(str(TRAINERS / 'evidence_accumulation.py'))}"
SHORT = ("--steps", "6", "--interrupt-at", "3", "--jobs", "2")


@pytest.fixture(scope="module", params=[None, "micro-from-updates", "warmup-from-loop"])
def run(request, tmp_path_factory):
    bug = request.param
    cmd = KIT + (f" --bug {bug}" if bug else "")
    return bug, *verification(tmp_path_factory, f"accumulation-{bug}", *SHORT, "--train-cmd", cmd)[:2]


def test_the_backward_passes_per_update_name_the_progress_counter(run):
    bug, proc, doc = run
    assert proc.returncode == (0 if bug is None else 1), proc.stderr[-3000:]
    if bug is None:
        return
    check = next(c for c in doc["checks"] if c["kind"] == "resume" and c["trajectory"] == "resumed")
    assert check["diagnosis"]["parts"] == ["progress"], check["diagnosis"]
    assert "1 backward passes in the update vs 2" in check["diagnosis"]["explanation"]
