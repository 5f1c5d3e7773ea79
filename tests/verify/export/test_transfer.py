"""The files sent and read back, and DEST's layout (verify/export/transfer.py), with plain files, on a local folder
and on S3 (moto's server) alike: a copy corrupted or lost at DEST is caught by its size and sha256; a file of RUN
that changes under the export stops it; CURRENT is written last and names a complete export, the earlier one and
what killed exports left removed only then; a DEST that is not an export's is refused."""

import hashlib
import io
from datetime import UTC, datetime

import pytest

from resumeproof.common.protocol import CheckKind
from resumeproof.verify.export import transfer
from resumeproof.verify.export.store import StoreError, open_store
from resumeproof.verify.export.transfer import CURRENT, EXPORT_JSON, EXPORTS, SourceChanged

pytestmark = pytest.mark.xdist_group("export")  # the folder's fixtures (conftest.py) are made once

FILES = {"checkpoint.pt": b"weights" * 1000, "checkpoint.pt.sha256": b"digest\n", "sub/loss.jsonl": b"{}\n"}


@pytest.fixture
def run(tmp_path):
    folder = tmp_path / "run"
    for name, data in FILES.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    return folder


@pytest.fixture(params=["local", "s3"])
def store(request, tmp_path):
    dest = str(tmp_path / "dest") if request.param == "local" else request.getfixturevalue("bucket") + "/dest"
    return open_store(dest, tmp_path / "run")


def corrupt(store, key, tmp_path):
    """One bit of a file at DEST flipped, as a faulty disk or transfer would."""
    back = tmp_path / "tampered"
    store.download(key, back)
    data = bytearray(back.read_bytes())
    data[0] ^= 1
    store.write(key, lambda f: f.write(bytes(data)))


def test_every_file_sent_reads_back_with_its_size_and_sha256(store, run, tmp_path):
    copied = transfer.send(store, run, sorted(FILES), "exports/a", {})
    assert {c.path: (c.size, c.sha256) for c in copied} == {
        name: (len(data), hashlib.sha256(data).hexdigest()) for name, data in FILES.items()
    }
    root, check = transfer.read_back(store, "exports/a", copied, tmp_path / "back")
    assert check.kind is CheckKind.COPY and check.passed, check.detail
    assert (root / "sub" / "loss.jsonl").read_bytes() == b"{}\n"


@pytest.mark.parametrize("fault", ["corrupted", "missing"])
def test_a_copy_corrupted_or_lost_at_dest_is_caught_and_named(store, run, tmp_path, fault):
    copied = transfer.send(store, run, sorted(FILES), "exports/a", {})
    if fault == "corrupted":
        corrupt(store, "exports/a/checkpoint.pt", tmp_path)
    else:
        store.remove("exports/a/sub/loss.jsonl")
    _, check = transfer.read_back(store, "exports/a", copied, tmp_path / "back")
    assert not check.passed
    named = "checkpoint.pt: 7000 bytes, sha256" if fault == "corrupted" else "sub/loss.jsonl: missing at DEST"
    assert check.detail is not None and check.detail.startswith(named)


def test_a_file_of_run_that_is_not_what_its_check_saw_stops_the_export(store, run):
    with pytest.raises(SourceChanged, match=r"checkpoint\.pt: changed while it was exported"):
        transfer.send(store, run, sorted(FILES), "exports/a", {"checkpoint.pt": "0" * 64})


def test_current_is_written_last_and_the_earlier_export_and_a_killed_ones_leftovers_go_only_then(store, tmp_path):
    now = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    old, new, killed = (transfer.new_id(step, now) for step in (10, 20, 30))
    assert transfer.prepare(store) is None
    for ident in (old, killed):
        store.write(f"{EXPORTS}/{ident}/{EXPORT_JSON}", lambda f: f.write(b"{}"))
    store.write(f"{EXPORTS}/not-ours/file", lambda f: f.write(b"kept"))
    first = transfer.put(store, f"{EXPORTS}/{old}", EXPORT_JSON, io.BytesIO(b"{}"))
    assert transfer.publish(store, old, first) == []
    assert transfer.prepare(store) == old
    assert store.children(EXPORTS) == sorted([old, "not-ours"])  # the killed one's leftovers went with it

    store.write(f"{EXPORTS}/{killed}/checkpoint.pt", lambda f: f.write(b"half"))  # a later export, killed
    assert transfer.current(store) == old  # until the new one is published
    document = b'{"new": 1}'
    written = transfer.put(store, f"{EXPORTS}/{new}", EXPORT_JSON, io.BytesIO(document))
    transfer.publish(store, new, written)
    assert store.children(EXPORTS) == sorted([new, "not-ours"])
    line = store.read_text(CURRENT)
    assert line == f"{hashlib.sha256(document).hexdigest()}  exports/{new}/EXPORT.json\n"  # what sha256sum -c reads


def test_a_dest_holding_what_no_export_wrote_or_a_foreign_marker_is_refused_untouched(store):
    store.write("notes.txt", lambda f: f.write(b"mine"))
    with pytest.raises(StoreError, match=r"holds notes\.txt, which no export wrote"):
        transfer.prepare(store)
    store.remove("notes.txt")
    store.write(CURRENT, lambda f: f.write(b"something else\n"))
    with pytest.raises(StoreError, match="CURRENT is not an export's marker; refusing to touch DEST"):
        transfer.prepare(store)
    assert store.children("") == [CURRENT]  # no probe left behind either
