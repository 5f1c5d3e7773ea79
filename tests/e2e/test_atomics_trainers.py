"""End to end, trainers that sum their gradients as a GPU's atomics do (tests/trainers/_atomics.py): a kit trainer
(atomics_kit.py) and an unmodified script under `--observe` (atomics_script.py). With the sums in a fixed order the
kit trainer is exact at `--atol 0`; in a run-dependent order both differ from themselves in the last bits, and are
judged in two tiers (docs/checks.md, "A trainer that is not deterministic"): an exact resume passes within its
measured spread, and each part a resume loses (optimizer, scheduler, GradScaler, generators, EMA, data position)
fails at its restore with that part named, in both verifications."""

import shlex
import sys
from pathlib import Path

import pytest

from tests.agreements import contradictions
from tests.helpers import TRAINERS, read_verification, reusing, run_verify

# Each family's first verification runs everything; its bugs, in their --resume-cmd alone, reuse its runs.
pytestmark = pytest.mark.xdist_group("atomics")

KIT = shlex.join([sys.executable, "-B", str(TRAINERS / "atomics_kit.py")])
SCRIPT = shlex.join([sys.executable, "-B", str(TRAINERS / "atomics_script.py")]) + " --iters {steps} --out {run}"
SHORT = ("--steps", "6", "--interrupt-at", "3", "--jobs", "2")
WATCH = ("--observe", "--train-cmd", SCRIPT, "--checkpoint", "{run}/ckpt_{step}.pt")


@pytest.fixture(scope="module")
def kit_bugs(tmp_path_factory):
    return reusing(tmp_path_factory, *SHORT, "--train-cmd", KIT)


@pytest.fixture(scope="module")
def scripts(tmp_path_factory):
    return reusing(tmp_path_factory, *SHORT, *WATCH)


def verify(out: Path, *args: str) -> tuple[str, int, dict]:
    proc = run_verify("--output", str(out), *SHORT, *args)
    return proc.stderr, proc.returncode, read_verification(out / "verification.json")


def observed(scripts, bug: str | None = None, *args: str) -> tuple[str, int, dict]:
    resume = SCRIPT + " --resume {checkpoint}" + (f" --bug {bug}" if bug else "")
    proc, doc, _ = scripts(bug or "correct", "--resume-cmd", resume, *args)
    return proc.stderr, proc.returncode, doc


def failed_parts(doc: dict) -> set[str]:
    return {p for c in doc["checks"] if not c["passed"] and c["diagnosis"] for p in c["diagnosis"]["parts"]}


def test_summing_in_a_fixed_order_the_kit_trainer_resumes_exactly_and_its_lost_ema_is_named(tmp_path):
    stderr, code, doc = verify(tmp_path / "run", "--atol", "0", "--train-cmd", f"{KIT} --ordered", "--faults", "ema")
    assert code == 0, stderr
    assert doc["determinism"]["deterministic"] is not False and doc["negative_divergence_detected"]
    assert doc["faults"]["ema"]["diagnosis"]["lost"] == "ema"
    assert contradictions(doc) == []


def test_the_kit_trainer_with_atomics_passes_within_its_spread_and_every_part_omitted_is_named(tmp_path):
    # k = 5, past the epoch's turn: the data generator has drawn since a fresh start, so its loss shows at the restore
    args = ("--steps", "8", "--interrupt-at", "5", "--train-cmd", KIT, "--faults", "all")
    stderr, code, doc = verify(tmp_path / "run", *args)
    assert code == 0, stderr
    assert doc["deterministic"] is False and doc["determinism"]["spread"]["factor"] == 10
    assert [c["passed"] for c in doc["checks"] if c["kind"] == "restore"] == [True]
    assert doc["comparison"]["full_resume"]["verdict"] == "within-spread"
    named = {part: f["diagnosis"]["parts"] for part, f in doc["faults"].items()}
    assert named == {part: [part] for part in doc["parts"]}  # every part, scaler and ema too, by its own name
    assert {f["diagnosis"]["rule"] for f in doc["faults"].values()} == {"restore"}  # each at its restore
    assert doc["comparison"]["no_rng_resume"]["diagnosis"]["parts"] == ["rng-numpy", "rng-torch"]
    assert contradictions(doc, faults_all=True) == []


@pytest.mark.parametrize(
    ("bug", "lost"),
    [
        # optimizer and scaler: their bug is --omit's (the part not loaded), named in the --faults all test above
        ("scheduler", {"scheduler"}),  # built again after the optimizer's load: not what --omit does
        ("ema", {"ema"}),  # a fresh average of the restored weights: not what --omit does
        ("rng", {"rng-torch"}),  # at k = 3, mid-epoch, the data generator is where a fresh start leaves it
        # data: its bug is --omit's too (the order not loaded), named at its restore in the --faults all test above
    ],
)
def test_a_kit_trainer_with_atomics_that_loses_a_part_fails_at_its_restore_with_the_part_named(kit_bugs, bug, lost):
    proc, doc, _ = kit_bugs(bug, "--resume-cmd", f"{KIT} --bug {bug}")
    stderr, code = proc.stderr, proc.returncode
    assert code == 1, stderr
    [restore] = [c for c in doc["checks"] if c["kind"] == "restore"]
    assert not restore["passed"] and restore["diagnosis"]["rule"] == "restore"
    assert failed_parts(doc) == lost, stderr[-2000:]
    assert contradictions(doc) == []


def test_the_unmodified_script_with_atomics_passes_within_its_spread_and_each_blocked_part_is_named(scripts):
    stderr, code, doc = observed(scripts, None, "--faults", "optimizer,scheduler,scaler")
    assert code == 0, stderr
    assert doc["deterministic"] is False and "continuous-repeat-2" in doc["trajectories"]
    assert [c["passed"] for c in doc["checks"] if c["kind"] == "restore"] == [True]
    named = {part: f["diagnosis"]["parts"] for part, f in doc["faults"].items()}
    assert named == {"optimizer": ["optimizer"], "scheduler": ["scheduler"], "scaler": ["scaler"]}
    assert doc["negative_divergence_detected"]


@pytest.mark.parametrize(("bug", "lost"), [("ema", {"ema"}), ("rng", {"rng-torch"}), ("data", {"data"})])
def test_an_unmodified_script_with_atomics_that_loses_a_part_is_named_at_its_restore(scripts, bug, lost):
    stderr, code, doc = observed(scripts, bug)
    assert code == 1, stderr
    assert doc["trajectories"]["interrupted"].get("reused_from"), "the correct script's runs, copied"
    [restore] = [c for c in doc["checks"] if c["kind"] == "restore"]
    assert not restore["passed"] and failed_parts(doc) == lost, stderr[-2000:]
