"""The classic flat file: its exact layout, inspect, resuming from it, and why that is not enough."""

import json
import struct
import subprocess
import sys

from tests.helpers import REPO, run_train, run_verify

FLAT = [sys.executable, "-B", "-m", "resumeproof", "flat"]


def flat(*args) -> subprocess.CompletedProcess:
    return subprocess.run([*FLAT, *map(str, args)], cwd=REPO, capture_output=True, text=True)


def test_export_writes_exactly_8_plus_12_n_bytes_with_the_header_first(tmp_path, interrupted_run):
    out = tmp_path / "flat.bin"
    proc = flat("export", interrupted_run / "checkpoint.pt", out)
    assert proc.returncode == 0, proc.stderr
    data = out.read_bytes()
    assert len(data) == 8 + 12 * 33 == 404
    assert struct.unpack("<ii", data[:8]) == (5, 33)
    weights = struct.unpack("<33f", data[8 : 8 + 132])
    params = json.loads((interrupted_run / "summary.json").read_text())["state"]["params"]
    first = params["hidden.weight"][0][0]  # the model's parameter order: hidden.weight first
    assert weights[0] == struct.unpack("<f", struct.pack("<f", first))[0]  # float32 of the float64 weight


def test_inspect_prints_the_header_and_checks_the_length(tmp_path, interrupted_run):
    out = tmp_path / "flat.bin"
    assert flat("export", interrupted_run / "checkpoint.pt", out).returncode == 0
    proc = flat("inspect", out)
    assert proc.returncode == 0, proc.stderr
    assert "step 5, 33 parameters, 404 bytes = 8 + 12 x 33 (length checked)" in proc.stdout
    out.write_bytes(out.read_bytes()[:-4])
    (tmp_path / "flat.bin.sha256").unlink()
    proc = flat("inspect", out)
    assert proc.returncode == 2 and "fingerprint file flat.bin.sha256 is missing" in proc.stderr


def test_a_short_file_is_refused_by_its_header(tmp_path):
    from resumeproof.kit import flat as flatfile

    data = struct.pack("<ii", 5, 33) + bytes(100)
    try:
        flatfile.decode(tmp_path / "x.bin", data)
    except flatfile.FlatError as err:
        assert "header says step 5, 33 parameters (404 bytes); the file has 108" in str(err)
    else:
        raise AssertionError("a short flat file was accepted")


def test_train_resumes_from_a_flat_file_but_not_together_with_a_checkpoint(tmp_path, interrupted_run):
    out = tmp_path / "flat.bin"
    assert flat("export", interrupted_run / "checkpoint.pt", out).returncode == 0
    proc = run_train("--steps", "2", "--output", tmp_path / "r", "--resume-flat", out)
    assert proc.returncode == 0, proc.stderr
    both = run_train("--steps", "2", "--output", tmp_path / "b", "--resume-flat", out, "--resume", out)
    assert both.returncode == 2 and "not both" in both.stderr


def test_the_flat_negative_control_diverges_and_names_its_cause(tmp_path):
    proc = run_verify("--output", tmp_path / "v", "--faults", "flat")
    assert proc.returncode == 0, proc.stderr
    fault = json.loads((tmp_path / "v" / "verification.json").read_text())["faults"]["flat"]
    assert fault["detected"] is True
    assert fault["cause"].startswith("weights and Adam moments only, in float32")
    assert {"step", "history", "state", "next"} <= set(fault["caught_by"])
    assert "flat file: weights and Adam moments only" in proc.stderr
