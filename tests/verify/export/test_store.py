"""The destination (verify/export/store.py): a local folder and an S3 bucket (moto's server on localhost) used alike,
by keys; a local one needs no fsspec; a DEST inside RUN, a file, an unknown scheme or a missing bucket is one line
naming DEST."""

import subprocess
import sys

import pytest

from resumeproof.verify.export.store import LocalStore, StoreError, open_store
from tests.helpers import REPO

pytestmark = pytest.mark.xdist_group("export")  # the folder's fixtures (conftest.py) are made once


@pytest.fixture(params=["local", "s3"])
def store(request, tmp_path):
    if request.param == "local":
        return open_store(str(tmp_path / "dest"), tmp_path / "run")
    return open_store(request.getfixturevalue("bucket") + "/dest", tmp_path / "run")


def test_a_file_written_reads_back_lists_and_goes(store, tmp_path):
    store.write("exports/a/b/c.bin", lambda f: f.write(b"bytes"))
    assert store.read_text("exports/a/b/c.bin") == "bytes"
    assert store.children("") == ["exports"] and store.children("exports/a") == ["b"]
    store.download("exports/a/b/c.bin", tmp_path / "back" / "c.bin")
    assert (tmp_path / "back" / "c.bin").read_bytes() == b"bytes"
    store.remove("exports/a")
    assert store.children("exports") == [] and store.read_text("exports/a/b/c.bin") is None
    with pytest.raises(FileNotFoundError):
        store.download("exports/a/b/c.bin", tmp_path / "again")


def test_a_local_write_leaves_no_temporary_file_even_when_it_fails(tmp_path):
    store = open_store(str(tmp_path / "dest"), tmp_path / "run")
    assert isinstance(store, LocalStore)

    def fails(f):
        f.write(b"half")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        store.write("exports/x/file", fails)
    assert [p.name for p in (tmp_path / "dest" / "exports" / "x").iterdir()] == []


@pytest.mark.parametrize("dest", ["{run}", "{run}/exports", "file://{run}/exports"], ids=["run", "inside", "file-url"])
def test_a_dest_inside_run_is_refused(tmp_path, dest):
    run = tmp_path / "run"
    run.mkdir()
    typed = dest.format(run=run)
    with pytest.raises(StoreError, match=f"DEST {typed}: inside RUN {run}"):
        open_store(typed, run)


def test_a_dest_that_is_a_file_is_refused(tmp_path):
    (tmp_path / "dest").write_text("x")
    with pytest.raises(StoreError, match="not a directory"):
        open_store(str(tmp_path / "dest"), tmp_path / "run")


def test_a_missing_bucket_is_one_line_naming_dest(aws, tmp_path):
    store = open_store("s3://no-such-bucket/dest", tmp_path / "run")
    with pytest.raises(StoreError) as caught:
        store.write("x", lambda f: f.write(b"1"))
    assert str(caught.value) == "DEST s3://no-such-bucket/dest: cannot write x: The specified bucket does not exist"
    with pytest.raises(StoreError, match="DEST foo://x: cannot open: Protocol not known: foo"):
        open_store("foo://x", tmp_path / "run")


def test_a_local_dest_needs_no_fsspec_and_a_url_says_how_to_get_it(tmp_path):
    code = (
        "import sys; sys.modules['fsspec'] = None\n"  # any import of fsspec now fails
        "from pathlib import Path\n"
        "from resumeproof.verify.export.store import StoreError, open_store\n"
        f"open_store({str(tmp_path / 'dest')!r}, Path('run')).write('a', lambda f: f.write(b'1'))\n"
        "try:\n    open_store('s3://b/x', Path('run'))\nexcept StoreError as err:\n    print(err)\n"
    )
    proc = subprocess.run([sys.executable, "-B", "-c", code], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "dest" / "a").read_bytes() == b"1"
    assert proc.stdout == "DEST s3://b/x: a URL needs fsspec: pip install 'resumeproof[export]'\n"
