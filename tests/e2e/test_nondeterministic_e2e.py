"""End to end, a trainer that differs from itself, judged in two tiers (docs/checks.md): its restore bit for bit
(a resume of 0 updates against what the interrupted run saved), its trajectory within its run-to-run spread as
its repeats measured it. Torch-free trainers here (tests/trainers/_scalar_loop.py, noise from a generator seeded
per run); trainers that emulate atomics, a kit trainer and an unmodified script, in test_atomics_trainers.py."""

import shlex
import sys
from pathlib import Path

from tests.agreements import contradictions
from tests.helpers import TRAINERS, read_verification, run_verify


def verify(out: Path, *args: str) -> tuple[str, int, dict]:
    proc = run_verify("--output", str(out), "--jobs", "2", *args)
    return proc.stderr, proc.returncode, read_verification(out / "verification.json")


def trainer_cmd(script: str) -> str:
    return shlex.join([sys.executable, "-B", str(TRAINERS / script)])


def by_kind(doc: dict, kind: str) -> list[dict]:
    return [c for c in doc["checks"] if c["kind"] == kind]


def test_an_exact_restore_within_the_measured_spread_passes_and_says_it_is_not_deterministic(tmp_path):
    stderr, code, doc = verify(tmp_path / "run", "--faults", "all", "--train-cmd", trainer_cmd("unseeded_late.py"))
    assert code == 0, stderr
    last = stderr.strip().splitlines()[-1]
    assert last.startswith("PASSED: not deterministic (differs from itself from update 6"), last
    spread = doc["determinism"]["spread"]
    assert doc["deterministic"] is False and spread["runs"][:3] == [
        "continuous",
        "continuous-repeat",
        "continuous-repeat-2",
    ]
    assert spread["envelope"]["loss"][4] == 0 < spread["envelope"]["loss"][5]  # the runs part at update 6
    assert [c["passed"] for c in by_kind(doc, "restore")] == [True]
    assert doc["comparison"]["full_resume"]["verdict"] == "within-spread"
    # the negative control and every fault differ at their restore, each named by the part it lost
    named = {part: f["diagnosis"]["parts"] for part, f in doc["faults"].items()}
    assert named == {"model": ["model"], "warmup": ["warmup"], "rng-python": ["rng-python"]}
    assert doc["comparison"]["no_rng_resume"]["diagnosis"]["parts"] == ["rng-python"]
    assert {f["diagnosis"]["rule"] for f in doc["faults"].values()} == {"restore"}
    assert contradictions(doc, faults_all=True) == []


def test_a_lost_part_of_a_trainer_that_differs_from_itself_fails_at_its_restore_and_is_named(tmp_path):
    stderr, code, doc = verify(tmp_path / "run", "--train-cmd", trainer_cmd("unseeded_forgets_warmup.py"))
    assert code == 1, stderr
    [restore] = by_kind(doc, "restore")
    assert not restore["passed"] and restore["first_mismatch"] == "state.warmup.count"
    assert restore["diagnosis"]["parts"] == ["warmup"] and restore["diagnosis"]["rule"] == "restore"
    assert "lost warmup at the restore, before update 6" in " ".join(stderr.split())
    # the lr the lost counter warms up again leaves the band, which the runs agree on exactly: the same part named
    [resume] = by_kind(doc, "resume")
    assert not resume["passed"] and resume["first_mismatch"] == "history[5].lr"
    assert resume["diagnosis"] == restore["diagnosis"]
    last = stderr.strip().splitlines()[-1]
    assert last.startswith("FAILED: not deterministic (differs from itself from update 2") and "; failed: " in last
    assert contradictions(doc) == []
