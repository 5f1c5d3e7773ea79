"""Each rule of the first-update diagnosis on a trainer of its own, a correct variant beside each bug:
- another number of backward passes in the first resumed update names the progress counter, not the generators the
  extra micro-batch moved nor the optimizer: a micro-step counter restored from the update count, and an accumulation
  warm-up read from the process's own update index (tests/trainers/evidence_accumulation.py);
- another loss from the same parameters, batch and generators says state outside the state_dict and names no part: a
  Python attribute, a module global (tests/trainers/evidence_outside_state.py);
- an lr that alone differs, the optimizer's state restored, is the schedule's or the counter's it is computed from,
  never the optimizer's: a warmup read from the loop's own index (no scheduler), and a LambdaLR made after the
  optimizer's load (tests/trainers/evidence_schedule.py).
"""

import shlex
import sys

import pytest

from tests.helpers import TRAINERS, verification

SHORT = ("--steps", "6", "--interrupt-at", "3", "--jobs", "2")
OUTSIDE = "state outside the state_dict (a Python attribute, a non-persistent buffer)"
BACKWARDS = "1 backward passes in the update vs 2"
# trainer, its flags, the parts the resume's diagnosis names (None: it resumes exactly), what its explanation says
CASES = [
    ("evidence_accumulation.py", "", None, ""),
    ("evidence_accumulation.py", "--bug micro-from-updates", ["progress"], BACKWARDS),
    ("evidence_accumulation.py", "--bug warmup-from-loop", ["progress"], BACKWARDS),
    ("evidence_outside_state.py", "", None, ""),
    ("evidence_outside_state.py", "--bug attribute", [], OUTSIDE),
    ("evidence_outside_state.py", "--bug global", [], OUTSIDE),
    ("evidence_schedule.py", "", None, ""),
    ("evidence_schedule.py", "--scheduler", None, ""),
    ("evidence_schedule.py", "--bug warmup-counter", ["progress"], "lr "),
    ("evidence_schedule.py", "--scheduler --bug scheduler-after-load", ["scheduler"], "lr "),
]


@pytest.mark.parametrize(("trainer", "flags", "lost", "said"), CASES, ids=[f"{t[9:-3]}{f}" for t, f, _, _ in CASES])
def test_the_first_resumed_update_names_what_its_evidence_shows_and_never_a_restored_part(
    tmp_path_factory, trainer, flags, lost, said
):
    cmd = f"{shlex.quote(sys.executable)} -B {shlex.quote(str(TRAINERS / trainer))} {flags}"
    name = f"{trainer[9:-3]}{flags}".replace("-", "").replace(" ", "_")
    proc, doc = verification(tmp_path_factory, name, *SHORT, "--train-cmd", cmd)[:2]
    assert proc.returncode == (0 if lost is None else 1), proc.stderr[-3000:]
    if lost is None:
        return
    check = next(c for c in doc["checks"] if c["kind"] == "resume" and c["trajectory"] == "resumed")
    assert check["diagnosis"]["parts"] == lost and "optimizer" not in lost, check["diagnosis"]
    assert said in check["diagnosis"]["explanation"]
