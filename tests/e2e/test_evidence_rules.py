"""Each rule of the first-update diagnosis on a trainer of its own, a correct variant beside each bug:
- another number of backward passes in the first resumed update names the progress counter, not the generators the
  extra micro-batch moved nor the optimizer: a micro-step counter restored from the update count, and an accumulation
  warm-up read from the process's own update index (tests/trainers/evidence_accumulation.py);
- a plain attribute of the model that training changes, in no state_dict, is named where it lives with its values
  (`model.hard`); a module global, which no record holds, leaves another loss from the same parameters, batch and
  generators, said as state outside the state_dict, naming no part (tests/trainers/evidence_outside_state.py);
- an lr that alone differs, the optimizer's state restored, is the schedule's or the counter's it is computed from,
  never the optimizer's: a warmup read from the loop's own index (no scheduler), and a LambdaLR made after the
  optimizer's load (tests/trainers/evidence_schedule.py).
"""

import shlex
import sys

import pytest

from tests.helpers import TRAINERS, verification

pytestmark = pytest.mark.xdist_group("evidence-rules")  # each trainer's correct run once, its bugs reuse it

SHORT = ("--steps", "6", "--interrupt-at", "3", "--jobs", "2")
OUTSIDE = "state outside the state_dict (a Python attribute, a non-persistent buffer)"
ATTRIBUTE = "model.hard: true in the continuous run, false after the restore"
BACKWARDS = "1 backward passes in the update vs 2"
# trainer, its flags, the bug of its resume (None: it resumes exactly), the parts its diagnosis names, what its
# explanation says. Each bug is in its resuming processes alone: the continuous and interrupted runs are its correct
# variant's, copied (--reuse-runs) from that variant's verification.
CASES = [
    ("evidence_accumulation.py", "", None, None, ""),
    ("evidence_accumulation.py", "", "micro-from-updates", ["progress"], BACKWARDS),
    ("evidence_accumulation.py", "", "warmup-from-loop", ["progress"], BACKWARDS),
    ("evidence_outside_state.py", "", None, None, ""),
    ("evidence_outside_state.py", "", "attribute", ["model.hard"], ATTRIBUTE),
    ("evidence_outside_state.py", "", "global", [], OUTSIDE),
    ("evidence_schedule.py", "", None, None, ""),
    ("evidence_schedule.py", "--scheduler", None, None, ""),
    ("evidence_schedule.py", "", "warmup-counter", ["progress"], "lr "),
    ("evidence_schedule.py", "--scheduler", "scheduler-after-load", ["scheduler"], "lr "),
]


@pytest.fixture(scope="module")
def correct(tmp_path_factory):
    """The verification of a trainer's correct variant (its output folder), made once."""
    made: dict[str, object] = {}

    def verified(cmd: str) -> object:
        if cmd not in made:
            proc, _, out = verification(tmp_path_factory, "correct", *SHORT, "--train-cmd", cmd)
            assert proc.returncode == 0, proc.stderr[-3000:]
            made[cmd] = out
        return made[cmd]

    return verified


@pytest.mark.parametrize(
    ("trainer", "flags", "bug", "lost", "said"),
    CASES,
    ids=[f"{t[9:-3]}{f}{f' --bug {b}' if b else ''}" for t, f, b, _, _ in CASES],
)
def test_the_first_resumed_update_names_what_its_evidence_shows_and_never_a_restored_part(
    tmp_path_factory, correct, trainer, flags, bug, lost, said
):
    cmd = f"{shlex.quote(sys.executable)} -B {shlex.quote(str(TRAINERS / trainer))} {flags}".strip()
    base = correct(cmd)
    if bug is None:
        return
    resume = ("--resume-cmd", f"{cmd} --bug {bug}", "--reuse-runs", str(base))
    proc, doc = verification(tmp_path_factory, bug, *SHORT, "--train-cmd", cmd, *resume)[:2]
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert {n for n, t in doc["trajectories"].items() if t.get("reused_from")} == {"continuous", "interrupted"}
    check = next(c for c in doc["checks"] if c["kind"] == "resume" and c["trajectory"] == "resumed")
    assert check["diagnosis"]["parts"] == lost and "optimizer" not in lost, check["diagnosis"]
    assert said in check["diagnosis"]["explanation"]
