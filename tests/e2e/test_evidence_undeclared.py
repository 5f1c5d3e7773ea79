"""A loop that declares no parts names the GradScaler or EMA it lost by the protocol's names (`scaler`, `ema`), from
the observer's records of the first resumed update; the same loop as a plain script under `--observe`, with other
checkpoint keys and another optimizer, gets the same names (tests/trainers/evidence_undeclared_parts.py,
evidence_undeclared_script.py)."""

import shlex
import sys

import pytest

from tests.helpers import TRAINERS, reusing, verification

# One worker for the module: each family's first verification runs everything, the others reuse its runs where their
# bug is in their resume alone (the kit's lose-scaler also saves no scaler: it runs in full).
pytestmark = pytest.mark.xdist_group("evidence-undeclared")

PY = shlex.quote(sys.executable)
KIT = f"{PY} -B {shlex.quote(str(TRAINERS / 'evidence_undeclared_parts.py'))}"
SCRIPT = f"{PY} -B {shlex.quote(str(TRAINERS / 'evidence_undeclared_script.py'))} --iters {{steps}} --out {{run}}"
SHORT = ("--steps", "6", "--interrupt-at", "3", "--jobs", "2")
LOST = {"lose-scaler": "scaler", "lose-ema": "ema", "ema-strict-false": "ema"}
SAVES_NONE = "lose-scaler"  # the kit loop's bug that changes what the interrupted run saves


def resumed(doc: dict) -> dict:
    return next(c for c in doc["checks"] if c["kind"] in ("resume", "restore") and c["trajectory"] == "resumed")


@pytest.fixture(scope="module")
def kits(tmp_path_factory):
    return reusing(tmp_path_factory, *SHORT, "--train-cmd", KIT)


@pytest.fixture(scope="module")
def scripts(tmp_path_factory):
    return reusing(tmp_path_factory, *SHORT, "--observe", "--train-cmd", SCRIPT, "--checkpoint", "{run}/ckpt_{step}.pt")


@pytest.mark.parametrize("bug", [None, *LOST])
def test_the_kit_loop_that_declares_no_parts_names_what_it_lost_and_passes_resumed_right(tmp_path_factory, kits, bug):
    if bug == SAVES_NONE:
        proc, doc, _ = verification(tmp_path_factory, bug, *SHORT, "--train-cmd", f"{KIT} --bug {bug}")
    else:
        proc, doc, _ = kits(f"kit-{bug}", *(("--resume-cmd", f"{KIT} --bug {bug}") if bug else ()))
    if bug is None:
        assert proc.returncode == 0, proc.stderr[-3000:]
        return
    assert proc.returncode == 1, proc.stderr[-3000:]
    diagnosis = resumed(doc)["diagnosis"]
    assert diagnosis["parts"] == [LOST[bug]] and diagnosis["rule"] == "first-update", diagnosis


@pytest.mark.parametrize("bug", ["lose-scaler", "ema-strict-false"])
def test_the_plain_script_under_observe_gets_the_same_names(scripts, bug):
    proc, doc, _ = scripts(f"script-{bug}", "--resume-cmd", f"{SCRIPT} --resume {{checkpoint}} --bug {bug}")
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert resumed(doc)["diagnosis"]["parts"] == [LOST[bug]]
