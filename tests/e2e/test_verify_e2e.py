"""End to end: verify_resume.py as a user runs it, a fresh process per verification, against the
bundled train.py and the small faulty trainers of tests/trainers/ (one fault each, named in their
docstrings). Exit codes: 0 passed, 1 a comparison failed, 2 verification could not be completed.
"""

import hashlib
import json
import os
import platform
import shlex
import signal
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from tests.agreements import contradictions
from tests.helpers import TRAINERS, read_verification, run_verify
from tests.interrupt import running

# One worker for the tests that read the proof (made once); the other verifications spread over both workers.
PROOF = pytest.mark.xdist_group("verify_e2e-proof")

NAMES = ("continuous", "interrupted", "resumed", "resumed-no-rng")
SMALL = ("--steps", "4", "--interrupt-at", "2")  # enough for every fault below; keeps the suite fast
NEGATIVE_CHECK = "resume without RNG restore diverges (negative control)"


class Verification(NamedTuple):
    proc: subprocess.CompletedProcess
    out: Path
    doc: dict[str, Any]


def trainer_cmd(script: str) -> str:
    return shlex.join([sys.executable, "-B", str(TRAINERS / script)])


def verify(out: Path, *args: str) -> Verification:
    proc = run_verify("--output", str(out), *args)
    report = out / "verification.json"
    return Verification(proc, out, read_verification(report) if report.is_file() else {})


def in_stderr(needle: str, stderr: str) -> bool:
    """`needle` in the verifier's stderr, whitespace aside: rich wraps lines at 80 columns when
    stderr is not a terminal, and folds a long path across lines."""
    return "".join(needle.split()) in "".join(stderr.split())


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- the bundled trainer passes: one verification, read by every test below -------------------


@pytest.fixture(scope="module")
def proof(tmp_path_factory) -> Verification:
    """verify_resume.py with its defaults (the packaged reference trainer, N = 10, k = 5), and the flat-file
    fault, which adds one trajectory to the same run rather than a verification of its own."""
    result = verify(tmp_path_factory.mktemp("proof") / "run", "--faults", "flat")
    assert result.proc.returncode == 0, result.proc.stderr
    return result


@PROOF
def test_bundled_trainer_passes_the_protocol(proof):
    doc = proof.doc
    assert doc["error"] is None
    assert doc["all_checks_passed"] is True
    assert doc["positive"] is True
    assert doc["negative_divergence_detected"] is True
    assert [c["name"] for c in doc["checks"] if not c["passed"]] == []
    assert "Traceback" not in proof.proc.stderr


@PROOF
def test_a_pass_repeats_nothing_and_its_document_never_contradicts_itself(proof):
    assert proof.doc["deterministic"] is None and contradictions(proof.doc) == []  # nothing repeated: unknown


@PROOF
def test_tolerance_and_next_lr_are_recorded(proof):
    assert proof.doc["tolerance"] == {"atol": 1e-12, "rtol": 0.0}
    # StepLR(step_size=3, gamma=0.5) after 10 updates: 0.03 * 0.5**3
    assert proof.doc["next_lr"] == pytest.approx(0.00375, rel=0, abs=1e-15)


@PROOF
@pytest.mark.parametrize(
    ("name", "steps", "extra"),
    [
        ("continuous", "10", []),
        ("interrupted", "5", []),
        ("resumed", "5", ["--resume", "{out}/interrupted/checkpoint.pt"]),
        ("resumed-no-rng", "5", ["--resume", "{out}/interrupted/checkpoint.pt", "--omit-rng-restore"]),
    ],
)
def test_every_trajectory_is_recorded_with_its_checkpoint_fingerprint(proof, name, steps, extra):
    out, entry = proof.out, proof.doc["trajectories"][name]
    tail = [arg.format(out=out) for arg in extra]
    train = [sys.executable, "-B", "-m", "resumeproof.reference"]  # the default: the packaged trainer
    assert entry["argv"] == [*train, "--steps", steps, "--output", str(out / name), *tail]
    assert entry["exit_code"] == 0
    assert entry["status"] == "done"
    assert isinstance(entry["wall_seconds"], float) and entry["wall_seconds"] > 0
    assert entry["checkpoint_sha256"] == sha256(out / name / "checkpoint.pt")
    assert entry["log"] == str(out / "logs" / f"{name}.log")
    assert (out / "logs" / f"{name}.log").is_file()


@PROOF
def test_full_resume_is_concordant_and_resume_without_rng_diverges(proof):
    full, no_rng = proof.doc["comparison"]["full_resume"], proof.doc["comparison"]["no_rng_resume"]
    assert full["verdict"] == "concordant"
    assert full["max_deviation"] == 0.0
    assert full["first_mismatch"] is None
    assert no_rng["verdict"] == "divergent"
    assert no_rng["first_mismatch"] is not None


@PROOF
def test_environment_is_recorded(proof):
    assert proof.doc["environment"] == {
        "resumeproof": metadata.version("resumeproof"),
        "python": platform.python_version(),
        "torch": metadata.version("torch"),
        "numpy": metadata.version("numpy"),
        "platform": platform.platform(),
        "threads": 1,
        "dtype": "float64",
        "device": "cpu",
        "gpu": None,
    }


@PROOF
def test_interrupted_checkpoint_is_mid_epoch(proof):
    summary = json.loads((proof.out / "interrupted" / "summary.json").read_text())
    data = summary["state"]["data"]
    assert summary["step"] == 5
    assert (data["epoch"], data["cursor"], len(data["permutation"])) == (0, 20, 24)


# -- a comparison fails: exit 1 -----------------------------------------------------------------
# (a trainer that forgets its optimizer, and --torch-load: tests/verify/report/test_junit.py reads those verifications)


def test_without_the_observers_records_the_summaries_alone_name_the_same_part(tmp_path):
    """A trainer the observer cannot watch gets the diagnosis its files support: here Adam's step counter, which
    counted 2 updates fewer, and the loss of update 4, the first record that differs."""
    proc, _, doc = verify(tmp_path / "run", *SMALL, "--no-observe", "--train-cmd", trainer_cmd("forgets_optimizer.py"))
    assert proc.returncode == 1, proc.stderr
    diagnosis = doc["comparison"]["full_resume"]["diagnosis"]
    assert (diagnosis["parts"], diagnosis["step"], diagnosis["rule"]) == (["optimizer"], 4, "restarted-counter")
    assert "diagnosis resumed: likely lost optimizer from update 4" in proc.stderr
    assert not (tmp_path / "run" / "observed").exists() or not any((tmp_path / "run" / "observed").iterdir())


def test_trainer_without_randomness_fails_the_negative_control(tmp_path):
    proc, _, doc = verify(tmp_path / "run", *SMALL, "--train-cmd", trainer_cmd("deterministic.py"))
    assert proc.returncode == 1, proc.stderr
    assert doc["error"] is None
    assert doc["positive"] is True
    assert doc["negative_divergence_detected"] is False
    assert doc["comparison"]["no_rng_resume"]["verdict"] == "concordant"
    assert [c["name"] for c in doc["checks"] if not c["passed"]] == [NEGATIVE_CHECK]
    negative = doc["comparison"]["no_rng_resume"]
    assert negative["identical_to_full_resume"] is True
    assert negative["diagnosis"]["parts"] == [] and negative["diagnosis"]["rule"] == "identical-to-full-resume"
    assert in_stderr("diagnosis resumed-no-rng: cause unknown: the checkpoint restores no random state", proc.stderr)


# -- verification cannot be completed: exit 2, one line, no traceback ----------------------------


@pytest.mark.parametrize(
    ("train_cmd", "extra", "message"),
    [
        pytest.param(trainer_cmd("crashing.py"), (), "exited with status 1", id="crashing"),
        # a hanging trainer: test_timed_out_trainer_is_killed_with_its_children, which asserts the same and more
        pytest.param(
            trainer_cmd("malformed_summary.py"),
            (),
            "continuous: {out}/continuous/summary.json: not valid JSON",  # refused by name
            id="malformed-summary",
        ),
        pytest.param(trainer_cmd("bad_fingerprint.py"), (), "sha256", id="bad-fingerprint"),
        pytest.param("no-such-trainer-xyz", (), "cannot start 'no-such-trainer-xyz'", id="no-such-command"),
    ],
)
def test_failed_trajectory_stops_verification(tmp_path, train_cmd, extra, message):
    proc, out, doc = verify(tmp_path / "run", *SMALL, *extra, "--train-cmd", train_cmd)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert message.format(out=out) in doc["error"]
    assert f"could not complete: {doc['error']}" in proc.stderr.splitlines()  # one line, though stderr is piped
    assert doc["all_checks_passed"] is False
    assert doc["comparison"] == {}
    # nothing that needs the refused interrupted checkpoint is run
    assert [doc["trajectories"][name]["status"] for name in NAMES] == ["failed", "failed", "skipped", "skipped"]
    assert not (out / "resumed").exists()


def test_resume_that_rewrites_its_input_checkpoint_is_refused(tmp_path):
    proc, out, doc = verify(tmp_path / "run", *SMALL, "--train-cmd", trainer_cmd("rewrites_resume_input.py"))
    assert proc.returncode == 2, proc.stderr
    assert doc["error"] == f"{out / 'interrupted' / 'checkpoint.pt'}: changed while it was being resumed from"


def test_the_verifier_never_calls_a_pivoted_resume_concordant(tmp_path):
    cmd = shlex.join([sys.executable, "-B", str(TRAINERS / "pivots_on_resume.py")])
    proc = run_verify("--output", tmp_path / "v", "--steps", "4", "--interrupt-at", "2", "--train-cmd", cmd)
    assert proc.returncode == 1, proc.stderr
    report = json.loads((tmp_path / "v" / "verification.json").read_text())
    assert report["positive"] is False
    assert report["comparison"]["full_resume"]["first_mismatch"] == "history[2]"  # the record names the pivot
    full = next(c for c in report["checks"] if c["name"].startswith("resumed (from step 2)"))
    assert "only right ['pivot']" in full["detail"]


@PROOF
def test_the_flat_negative_control_diverges_and_names_its_cause(proof):
    proc, fault = proof.proc, proof.doc["faults"]["flat"]
    assert fault["detected"] is True
    assert fault["cause"].startswith("weights and Adam moments only, in float32")
    assert {"step", "history", "state", "next"} <= set(fault["caught_by"])
    assert "flat file: weights and Adam moments only" in proc.stderr


def test_timed_out_trainer_is_killed_with_its_children(tmp_path):
    proc, out, doc = verify(tmp_path / "run", *SMALL, "--timeout", "3", "--train-cmd", trainer_cmd("hanging.py"))
    pids = [int(pid) for name in ("continuous", "interrupted") for pid in (out / name / "pids").read_text().split()]
    try:
        assert proc.returncode == 2, proc.stderr
        assert "Traceback" not in proc.stderr and "timed out" in doc["error"]
        assert in_stderr(f"could not complete: {doc['error']}", proc.stderr)
        assert doc["all_checks_passed"] is False and doc["comparison"] == {}
        assert [doc["trajectories"][name]["status"] for name in NAMES] == ["failed", "failed", "skipped", "skipped"]
        assert not (out / "resumed").exists()
        assert len(pids) == 4  # each of the two trajectories: the trainer and the child it started
        assert [pid for pid in pids if running(pid)] == []
    finally:
        for pid in pids:  # only processes this test's trainers started, and only if still there
            if running(pid):
                os.kill(pid, signal.SIGKILL)


def test_existing_output_is_refused_and_left_untouched(tmp_path):
    out = tmp_path / "run"
    out.mkdir()
    mine = out / "notes.txt"
    mine.write_text("not the verifier's\n")
    before = mine.stat().st_mtime_ns
    proc, _, _ = verify(out)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert in_stderr(f"--output {out}: already exists", proc.stderr)
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]  # no verification.json, no logs
    assert mine.read_text() == "not the verifier's\n"
    assert mine.stat().st_mtime_ns == before


@pytest.mark.parametrize(("steps", "interrupt_at"), [(4, 4), (4, 7)])
def test_interruption_not_before_the_last_step_is_a_usage_error(tmp_path, steps, interrupt_at):
    out = tmp_path / "run"
    proc, _, _ = verify(out, "--steps", str(steps), "--interrupt-at", str(interrupt_at))
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "Usage:" in proc.stderr
    assert "--interrupt-at" in proc.stderr
    assert not out.exists()
