"""An lr that alone differs at the first resumed update, the optimizer's state restored, is the schedule's or the
counter's it is computed from, never the optimizer's: a warmup read from the loop's own index (no scheduler), and a
LambdaLR made after the optimizer's load (tests/trainers/evidence_schedule.py); both controls pass."""

import shlex
import sys

import pytest

from tests.helpers import TRAINERS, verification

pytestmark = pytest.mark.xdist_group("evidence-schedule")
KIT = f"{shlex.quote(sys.executable)} -B {shlex.quote(str(TRAINERS / 'evidence_schedule.py'))}"
SHORT = ("--steps", "6", "--interrupt-at", "3", "--jobs", "2")
CASES = {
    "": None,
    "--scheduler": None,
    "--bug warmup-counter": "progress",
    "--scheduler --bug scheduler-after-load": "scheduler",
}


@pytest.fixture(scope="module", params=list(CASES))
def run(request, tmp_path_factory):
    flags = request.param
    name = flags.replace("-", "").replace(" ", "_") or "control"
    return CASES[flags], *verification(tmp_path_factory, name, *SHORT, "--train-cmd", f"{KIT} {flags}")[:2]


def test_the_lr_alone_names_the_schedule_or_the_counter_never_the_optimizer(run):
    lost, proc, doc = run
    assert proc.returncode == (0 if lost is None else 1), proc.stderr[-3000:]
    if lost is None:
        return
    check = next(c for c in doc["checks"] if c["kind"] == "resume" and c["trajectory"] == "resumed")
    assert check["diagnosis"]["parts"] == [lost] and "optimizer" not in check["diagnosis"]["parts"]
    assert "lr " in check["diagnosis"]["explanation"]
