"""A loop that declares no parts names the GradScaler or EMA it lost by the protocol's names (`scaler`, `ema`), from
the observer's records of the first resumed update; the same loop as a plain script under `--observe`, with other
checkpoint keys and another optimizer, gets the same names (tests/trainers/evidence_undeclared_parts.py,
evidence_undeclared_script.py)."""

import shlex
import sys

import pytest

from tests.helpers import TRAINERS, verification

PY = shlex.quote(sys.executable)
KIT = f"{PY} -B {shlex.quote(str(TRAINERS / 'evidence_undeclared_parts.py'))}"
SCRIPT = f"{PY} -B {shlex.quote(str(TRAINERS / 'evidence_undeclared_script.py'))} --iters {{steps}} --out {{run}}"
SHORT = ("--steps", "6", "--interrupt-at", "3", "--jobs", "2")
LOST = {"lose-scaler": "scaler", "lose-ema": "ema", "ema-strict-false": "ema"}


def resumed(doc: dict) -> dict:
    return next(c for c in doc["checks"] if c["kind"] in ("resume", "restore") and c["trajectory"] == "resumed")


def each(how: str, bugs) -> list:
    """The bugs as parameters, each in an xdist group of its own: its verification made once, the verifications spread
    over both workers."""
    return [pytest.param(bug, marks=pytest.mark.xdist_group(f"evidence-undeclared:{how}-{bug}")) for bug in bugs]


@pytest.fixture(scope="module", params=each("kit", [None, *LOST]))
def kit_run(request, tmp_path_factory):
    bug = request.param
    cmd = KIT + (f" --bug {bug}" if bug else "")
    return bug, *verification(tmp_path_factory, f"kit-{bug}", *SHORT, "--train-cmd", cmd)[:2]


@pytest.fixture(scope="module", params=each("script", ["lose-scaler", "ema-strict-false"]))
def script_run(request, tmp_path_factory):
    bug = request.param
    watch = ("--observe", "--train-cmd", SCRIPT, "--resume-cmd", f"{SCRIPT} --resume {{checkpoint}} --bug {bug}")
    watch += ("--checkpoint", "{run}/ckpt_{step}.pt")
    return bug, *verification(tmp_path_factory, f"script-{bug}", *SHORT, *watch)[:2]


def test_the_kit_loop_that_declares_no_parts_names_what_it_lost_and_passes_resumed_right(kit_run):
    bug, proc, doc = kit_run
    if bug is None:
        assert proc.returncode == 0, proc.stderr[-3000:]
        return
    assert proc.returncode == 1, proc.stderr[-3000:]
    diagnosis = resumed(doc)["diagnosis"]
    assert diagnosis["parts"] == [LOST[bug]] and diagnosis["rule"] == "first-update", diagnosis


def test_the_plain_script_under_observe_gets_the_same_names(script_run):
    bug, proc, doc = script_run
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert resumed(doc)["diagnosis"]["parts"] == [LOST[bug]]
