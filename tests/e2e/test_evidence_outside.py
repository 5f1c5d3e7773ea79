"""Another loss from the same parameters, batch and generators: state outside the state_dict, said in those words and
no part named, even where the summaries show an optimizer counter restarted later (an effect: the records show the
optimizer restored). Two styles, a Python attribute of the model and a module-level global; the control passes
(tests/trainers/evidence_outside_state.py)."""

import shlex
import sys

import pytest

from tests.helpers import TRAINERS, verification

pytestmark = pytest.mark.xdist_group("evidence-outside")
KIT = f"{shlex.quote(sys.executable)} -B {shlex.quote(str(TRAINERS / 'evidence_outside_state.py'))}"
SHORT = ("--steps", "6", "--interrupt-at", "3", "--jobs", "2")


@pytest.fixture(scope="module", params=[None, "attribute", "global"])
def run(request, tmp_path_factory):
    bug = request.param
    cmd = KIT + (f" --bug {bug}" if bug else "")
    return bug, *verification(tmp_path_factory, f"outside-{bug}", *SHORT, "--train-cmd", cmd)[:2]


def test_state_outside_the_state_dict_is_said_and_no_part_named(run):
    bug, proc, doc = run
    assert proc.returncode == (0 if bug is None else 1), proc.stderr[-3000:]
    if bug is None:
        return
    check = next(c for c in doc["checks"] if c["kind"] == "resume" and c["trajectory"] == "resumed")
    assert check["diagnosis"]["parts"] == [], check["diagnosis"]
    said = "state outside the state_dict (a Python attribute, a non-persistent buffer)"
    assert said in check["diagnosis"]["explanation"]
