"""End to end, the trainer that sums its gradients as a GPU's atomics do (tests/trainers/atomics_kit.py) with the sums
in a fixed order: exactly deterministic, its resume passes at `--atol 0` and a lost EMA is caught and named."""

import shlex
import sys
from pathlib import Path

from tests.agreements import contradictions
from tests.helpers import TRAINERS, read_verification, run_verify

ORDERED = shlex.join([sys.executable, "-B", str(TRAINERS / "atomics_kit.py"), "--ordered"])


def verify(out: Path, *args: str) -> tuple[str, int, dict]:
    proc = run_verify("--output", str(out), "--atol", "0", "--steps", "6", "--interrupt-at", "3", *args)
    return proc.stderr, proc.returncode, read_verification(out / "verification.json")


def test_the_atomics_trainer_summing_in_a_fixed_order_resumes_exactly_and_its_lost_ema_is_named(tmp_path):
    stderr, code, doc = verify(tmp_path / "run", "--train-cmd", ORDERED, "--faults", "ema")
    assert code == 0, stderr
    assert doc["determinism"]["deterministic"] is not False and doc["negative_divergence_detected"]
    assert doc["faults"]["ema"]["diagnosis"]["lost"] == "ema"
    assert contradictions(doc) == []


def test_the_atomics_trainer_whose_resume_starts_its_ema_again_is_caught_with_the_ema_named(tmp_path):
    stderr, code, doc = verify(tmp_path / "run", "--train-cmd", f"{ORDERED} --bug ema")
    assert code == 1, stderr
    said = doc["comparison"]["full_resume"]["diagnosis"]
    assert (said["lost"], said["parts"]) == ("ema", ["ema"])
    assert contradictions(doc) == []
