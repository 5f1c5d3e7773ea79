"""The classic flat file from the kit's side (kit/flat.py): `resumeproof flat export` writes its exact layout, and
train.py resumes from one, though not together with a checkpoint. Reading one without torch:
tests/common/test_flatfile.py; why resuming from one is not enough: the verifier's `--faults flat`
(tests/e2e/test_verify_e2e.py)."""

import json
import struct

from tests.helpers import flat, run_train


def test_export_writes_exactly_8_plus_12_n_bytes_with_the_header_first(tmp_path, interrupted_run):
    out = tmp_path / "flat.bin"
    proc = flat("export", interrupted_run / "checkpoint.pt", out)
    assert proc.returncode == 0, proc.stderr
    data = out.read_bytes()
    assert len(data) == 8 + 12 * 33 == 404
    assert struct.unpack("<ii", data[:8]) == (5, 33)
    weights = struct.unpack("<33f", data[8 : 8 + 132])
    model = json.loads((interrupted_run / "summary.json").read_text())["state"]["model"]
    first = model["hidden.weight"][0][0]  # the model's parameter order: hidden.weight first
    assert weights[0] == struct.unpack("<f", struct.pack("<f", first))[0]  # float32 of the float64 weight


def test_train_resumes_from_a_flat_file_but_not_together_with_a_checkpoint(tmp_path, interrupted_run):
    out = tmp_path / "flat.bin"
    assert flat("export", interrupted_run / "checkpoint.pt", out).returncode == 0
    proc = run_train("--steps", "2", "--output", tmp_path / "r", "--resume-flat", out)
    assert proc.returncode == 0, proc.stderr
    both = run_train("--steps", "2", "--output", tmp_path / "b", "--resume-flat", out, "--resume", out)
    assert both.returncode == 2 and "not both" in both.stderr
