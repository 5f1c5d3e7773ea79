"""What the resumes start from (verify/run/inputs.py): a checkpoint fingerprinted file by file, the first file a
resume changed, wrote or removed named; a protocol checkpoint's fingerprint as its admission took it; and a run
folder copied whole, metadata and links included, to a fresh name only once complete."""

import os
from pathlib import Path

import pytest

from resumeproof.common import fingerprint
from resumeproof.common.checkpoint_files import FileInfo
from resumeproof.verify.run import inputs
from resumeproof.verify.run.outputs import CheckpointInfo


def folder(tmp_path: Path) -> Path:
    run = tmp_path / "interrupted"
    (run / "sub").mkdir(parents=True)
    (run / "ckpt.pt").write_bytes(b"weights")
    (run / "sub" / "rng.bin").write_bytes(b"state")
    (run / "latest").symlink_to("ckpt.pt")
    return run


def test_an_untouched_checkpoint_file_or_folder_is_unchanged(tmp_path):
    run = folder(tmp_path)
    taken = [inputs.take(run), inputs.take(run / "ckpt.pt")]
    assert inputs.changed(taken) is None
    assert taken[1].sha256 == fingerprint.sha256_file(run / "ckpt.pt")
    assert set(taken[0].digests) == {"ckpt.pt", "sub/rng.bin", "latest"}


@pytest.mark.parametrize(
    ("touch", "said"),
    [
        (lambda run: (run / "sub" / "rng.bin").write_bytes(b"other"), "sub/rng.bin: changed"),
        (lambda run: (run / "ckpt.pt").unlink(), "ckpt.pt: removed"),
        (lambda run: (run / "sub" / "new.pt").write_bytes(b""), "sub/new.pt: written"),
        (lambda run: ((run / "latest").unlink(), (run / "latest").symlink_to("sub")), "latest: changed"),
    ],
    ids=["content", "removed", "added", "relinked"],
)
def test_the_first_file_a_resume_changed_wrote_or_removed_is_named(tmp_path, touch, said):
    run = folder(tmp_path)
    taken = inputs.take(run)
    touch(run)
    assert inputs.changed([taken]) == f"{run}/{said} while it was being resumed from"


def test_a_file_checkpoint_rewritten_with_the_same_size_is_named_itself(tmp_path):
    run = folder(tmp_path)
    taken = inputs.take(run / "ckpt.pt")
    (run / "ckpt.pt").write_bytes(b"WEIGHTS")
    assert inputs.changed([taken]) == f"{run / 'ckpt.pt'}: changed while it was being resumed from"


def test_a_protocol_checkpoint_is_held_to_the_digests_it_was_admitted_with(tmp_path):
    run = folder(tmp_path)
    digest = fingerprint.sha256_file(run / "ckpt.pt")
    as_file = CheckpointInfo(run / "ckpt.pt", digest, 1, ("x",))
    files = (FileInfo("ckpt.pt", digest, "torch"), FileInfo("sub/rng.bin", "0" * 64, "torch"))
    as_dir = CheckpointInfo(run, "d", 1, ("x",), files)
    assert inputs.changed([inputs.accepted(as_file)]) is None
    assert inputs.changed([inputs.accepted(as_dir)]) == f"{run}/sub/rng.bin: changed while it was being resumed from"


def test_a_run_folder_is_copied_whole_with_its_metadata_and_links_to_a_fresh_name(tmp_path):
    run = folder(tmp_path)
    os.utime(run / "ckpt.pt", (1_000_000, 1_000_000))
    to = tmp_path / "resumed"
    inputs.copy_run(run, to)
    assert inputs.changed([inputs.Fingerprint(to, inputs.take(run).digests)]) is None
    assert (to / "ckpt.pt").stat().st_mtime == 1_000_000 and os.readlink(to / "latest") == "ckpt.pt"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["interrupted", "resumed"]  # no temporary left
    with pytest.raises(inputs.InputError, match="resumed: exists"):
        inputs.copy_run(run, to)


def test_a_copy_that_fails_leaves_no_half_folder_and_says_which(tmp_path):
    with pytest.raises(inputs.InputError, match=f"cannot copy {tmp_path / 'missing'} to {tmp_path / 'resumed'}"):
        inputs.copy_run(tmp_path / "missing", tmp_path / "resumed")
    assert list(tmp_path.iterdir()) == []
