"""What a fork refuses before anything runs (a checkpoint that is missing or not held to its sidecar, an output that
holds anything; nothing is created on the way), and after: a checkpoint written while it was resumed from."""

import pytest

from resumeproof.common import fingerprint
from resumeproof.common.errors import ResumeproofError
from resumeproof.verify.fork import run as fork_run
from resumeproof.verify.run.outputs import CheckpointInfo


def test_a_missing_checkpoint_is_named_as_typed(tmp_path):
    with pytest.raises(ResumeproofError, match=r"^CHECKPOINT .*/gone.pt: missing$"):
        fork_run._source(tmp_path / "gone.pt")


def test_a_checkpoint_without_its_sidecar_is_refused(tmp_path):
    (tmp_path / "c.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(ResumeproofError, match=r"^CHECKPOINT .*c.pt"):
        fork_run._source(tmp_path / "c.pt")


def test_an_output_that_holds_anything_is_refused_and_left_as_it_was(tmp_path):
    held = tmp_path / "held"
    held.mkdir()
    (held / "notes.txt").write_text("mine")
    with pytest.raises(ResumeproofError, match=r"--output .*held: already holds notes.txt; refusing to touch it"):
        fork_run._claim(held)
    assert [p.name for p in held.iterdir()] == ["notes.txt"]
    (tmp_path / "file").write_text("mine")
    with pytest.raises(ResumeproofError, match="already exists and is no directory"):
        fork_run._claim(tmp_path / "file")


def test_an_absent_or_empty_output_is_taken(tmp_path):
    fork_run._claim(tmp_path / "new" / "fork")
    (tmp_path / "empty").mkdir()
    fork_run._claim(tmp_path / "empty")
    assert (tmp_path / "new" / "fork").is_dir()


def test_a_source_or_a_copy_written_during_the_fork_is_an_error(tmp_path):
    def signed(name: str) -> CheckpointInfo:
        (tmp_path / name).write_bytes(b"state")
        return CheckpointInfo(tmp_path / name, fingerprint.sha256_file(tmp_path / name), 0, ())

    source, copies = signed("source.pt"), {"control": signed("control.pt"), "low": signed("low.pt")}
    assert fork_run._unchanged(source, copies) is None
    (tmp_path / "low.pt").write_bytes(b"written by its trainer")
    assert fork_run._unchanged(source, copies) == f"low: {tmp_path / 'low.pt'} changed while it was resumed from"
    (tmp_path / "source.pt").write_bytes(b"written")
    assert fork_run._unchanged(source, copies) == f"CHECKPOINT {tmp_path / 'source.pt'}: changed during the fork"
