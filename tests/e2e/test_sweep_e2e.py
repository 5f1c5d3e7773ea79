"""End to end, the proof extended: every interruption point, chains of segments, a checkpoint
cadence that must change nothing, the plot. The fault matrix (each omitted part caught and named) runs through Ray
jobs and local processes alike in tests/e2e/test_launcher_ray.py.
"""

import os
import shlex
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from tests.agreements import contradictions
from tests.helpers import REPO, TRAINERS, read_verification, run_verify


def verify(out: Path, *args: str, env: dict | None = None) -> tuple[subprocess.CompletedProcess, dict]:
    if env is None:
        proc = run_verify("--output", str(out), *args)
    else:
        argv = [sys.executable, "-B", str(REPO / "verify_resume.py"), "--output", str(out), *args]
        proc = subprocess.run(argv, capture_output=True, text=True, cwd=REPO, env=env, timeout=240)
    report = out / "verification.json"
    return proc, read_verification(report) if report.is_file() else {}


def trainer_cmd(script: str) -> str:
    return shlex.join([sys.executable, "-B", str(TRAINERS / script)])


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> tuple[subprocess.CompletedProcess, dict, Path]:
    """One verification of every interruption point, a checkpoint every step and two chains of segments, with the plot:
    the sweep's runs beside one another, read by the two tests below."""
    out = tmp_path_factory.mktemp("sweep") / "run"
    args = ("--steps", "6", "--interrupt-at", "all", "--check-cadence", "--plot")
    proc, doc = verify(out, *args, "--segments", "4,2", "--segments", "1,1,2,2")
    return proc, doc, out


SWEEP = pytest.mark.xdist_group("sweep")  # one worker for the tests that read the sweep: it is made once


@SWEEP
def test_every_interruption_point_and_a_checkpoint_every_step_pass(sweep):
    proc, doc, out = sweep
    assert proc.returncode == 0, proc.stderr
    assert doc["interrupt_at"] == [5, 1, 2, 3, 4]  # the default point first: the negative control's
    resumes = doc["comparison"]["resumes"]
    expected = {"resumed", *(f"resumed-{k}" for k in (1, 2, 3, 4)), "continuous-every-1", "chain1-seg2", "chain2-seg4"}
    assert set(resumes) == expected
    assert all(entry["verdict"] == "concordant" and entry["max_deviation"] == 0.0 for entry in resumes.values())
    cadence = out / "continuous-every-1"
    kept = [f"step_{s:06d}.pt" for s in (4, 5, 6)]  # train.py keeps the newest 3 generations by default
    assert sorted(p.name for p in cadence.glob("step_*.pt")) == kept
    assert all(Path(f"{p}.sha256").is_file() for p in cadence.glob("step_*.pt"))


@SWEEP
def test_chains_of_segments_pass_and_the_plot_is_a_png(sweep):
    proc, doc, out = sweep
    assert proc.returncode == 0, proc.stderr
    assert doc["segments"] == [[4, 2], [1, 1, 2, 2]]
    assert doc["comparison"]["resumes"]["chain1-seg2"]["verdict"] == "concordant"
    assert doc["comparison"]["resumes"]["chain2-seg4"]["verdict"] == "concordant"
    prefixes = [c for c in doc["checks"] if c["kind"] == "prefix" and c["trajectory"].startswith("chain2-")]
    assert len(prefixes) == 3 and all(c["passed"] for c in prefixes)  # every segment but the last one
    png = (out / "verification.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and png[12:16] == b"IHDR"
    assert struct.unpack(">II", png[16:24]) == (1000, 700)


def test_a_fault_run_that_does_not_echo_its_omission_is_refused_never_counted(tmp_path):
    args = ("--steps", "4", "--interrupt-at", "2", "--faults", "scheduler")
    proc, doc = verify(tmp_path / "run", *args, "--train-cmd", trainer_cmd("ignores_omit.py"))
    assert proc.returncode == 2, proc.stderr
    assert doc["error"].startswith("fault-scheduler: ")
    assert "ran with --omit=scheduler but meta.omitted is [], not ['scheduler']" in doc["error"]
    assert doc["faults"] == {} and doc["all_checks_passed"] is False


def test_an_argparse_trainer_without_omit_cannot_pass_the_fault_matrix(tmp_path):
    """parse_known_args would read `--omit PART` as --omit-rng-restore: a resume that diverges, a false catch."""
    args = ("--steps", "4", "--interrupt-at", "2", "--faults", "model,optimizer,data")
    proc, doc = verify(tmp_path / "run", *args, "--train-cmd", trainer_cmd("swallows_omit.py"))
    assert proc.returncode == 2, proc.stderr
    assert "ignored explicit argument 'model'" in doc["error"] or "ignored explicit argument" in doc["error"]
    assert "faults caught" not in proc.stderr


def test_a_fault_the_trainer_claims_but_does_not_carry_out_fails_and_is_named(tmp_path):
    args = ("--steps", "4", "--interrupt-at", "2", "--faults", "scheduler,model")
    proc, doc = verify(tmp_path / "run", *args, "--train-cmd", trainer_cmd("lies_about_omit.py"))
    assert proc.returncode == 1, proc.stderr
    assert doc["positive"] is True and doc["negative_divergence_detected"] is True
    assert doc["blind_to"] == ["scheduler", "model"]
    assert doc["faults"]["model"] == {
        "status": "not-caught",  # a protocol trainer omits the part itself: never "not applicable"
        "not_applicable": None,
        "detected": False,
        "cause": "model not restored",
        "caught_by": [],
        "first_mismatch": None,
        "max_deviation": 0.0,
        "mismatches": 0,
        "diagnosis": None,
        "identical_to_full_resume": True,
    }
    said = "resume without scheduler did not diverge (identical to the full resume). resume without model did not"
    assert f"FAILED: {said} diverge (identical to the full resume)" in proc.stderr
    assert contradictions(doc) == []


def test_a_trainer_that_rejects_omit_is_reported_not_skipped(tmp_path):
    args = ("--steps", "4", "--interrupt-at", "2", "--faults", "model")
    proc, doc = verify(tmp_path / "run", *args, "--train-cmd", trainer_cmd("deterministic.py"))
    assert proc.returncode == 2, proc.stderr
    assert doc["error"].startswith("fault-model: exited with status 2: ")
    # the trainer's own words, from its log (argparse reads --omit=model as an abbreviation of
    # --omit-rng-restore given a value, and refuses it)
    assert "deterministic.py: error: argument --omit-rng-restore: ignored explicit argument 'model'" in doc["error"]
    assert "Traceback" not in proc.stderr


def test_plot_without_matplotlib_says_how_to_install_it(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO / "tests" / "fake_matplotlib")}
    proc, _ = verify(tmp_path / "run", "--plot", env=env)
    assert proc.returncode == 2, proc.stderr
    assert '-e ".[plot]"' in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--interrupt-at", "0"), "1 <= k < --steps 10"),
        (("--interrupt-at", "10"), "1 <= k < --steps 10"),
        (("--interrupt-at", "3,3"), "distinct"),
        (("--interrupt-at", "x"), "not a comma-separated list of integers"),
        (("--faults", "model,Bogus!"), "a part is a lower-case name"),
        (("--segments", "3,3"), "sum to --steps 10"),
        (("--segments", "10"), "at least two counts"),
    ],
)
def test_bad_sweep_arguments_are_refused_before_anything_runs(tmp_path, args, message):
    proc, _ = verify(tmp_path / "run", *args)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr
    assert not (tmp_path / "run").exists()
