"""sha256 sidecars in sha256sum format and the write they travel with (common/fingerprint.py). A checkpoint's bad
sidecar, refused by its load: tests/kit/test_checkpoint.py; a kill during the write: the same file."""

import hashlib

import pytest

from resumeproof.common import fingerprint


def test_the_digest_is_of_the_bytes_on_disk_and_the_sidecar_holds_them_to_it(tmp_path):
    path = tmp_path / "f.bin"
    digest = fingerprint.write_atomic(path, b"data")
    assert digest == hashlib.sha256(b"data").hexdigest() and path.read_bytes() == b"data"
    fingerprint.write_sidecar(path, digest)
    assert fingerprint.sidecar(path).read_text() == f"{digest}  f.bin\n"
    assert fingerprint.verify(path) == digest
    path.write_bytes(b"date")
    with pytest.raises(fingerprint.FingerprintError, match=r"f\.bin: sha256 \w+\.\.\. does not match f\.bin\.sha256"):
        fingerprint.verify(path)


def test_a_write_that_fails_its_check_leaves_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "f.bin"
    fingerprint.write_atomic(path, b"old")

    def refuse(written):
        assert written.read_bytes() == b"new"  # checked as read back, under another name
        raise OSError("refused on read-back")

    with pytest.raises(OSError, match="refused on read-back"):
        fingerprint.write_atomic(path, b"new", check=refuse)
    assert path.read_bytes() == b"old" and [p.name for p in tmp_path.iterdir()] == ["f.bin"]
