"""The classic flat file read without torch (common/flatfile.py): `resumeproof flat inspect` prints its header and
checks its length, a file its header does not describe is refused, and the layout round-trips. Exporting one:
tests/kit/test_flat.py."""

import struct

import numpy as np
import pytest

from resumeproof.common import flatfile
from tests.helpers import flat


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
    with pytest.raises(flatfile.FlatError, match=r"header says step 5, 33 parameters \(404 bytes\); the file has 108"):
        flatfile.decode(tmp_path / "x.bin", struct.pack("<ii", 5, 33) + bytes(100))
    with pytest.raises(flatfile.FlatError, match="7 bytes, shorter than the 8-byte header"):
        flatfile.decode(tmp_path / "x.bin", bytes(7))


def test_encode_writes_the_header_then_weights_m_and_v_and_decode_reads_them_back(tmp_path):
    weights, m, v = (np.array(values, dtype=np.float32) for values in ([0.1, -2.0], [1e-30, 3.0], [5.0, 0.0]))
    data = flatfile.encode(flatfile.Flat(7, weights, m, v))
    assert len(data) == flatfile.size(2) == 8 + 12 * 2
    assert struct.unpack("<ii6f", data) == (7, 2, *weights.tolist(), *m.tolist(), *v.tolist())
    back = flatfile.decode(tmp_path / "x.bin", data)
    assert back.step == 7 and [a.tolist() for a in (back.weights, back.m, back.v)] == [
        weights.tolist(),
        m.tolist(),
        v.tolist(),
    ]
