"""A checkpoint a framework or a loop of its own wrote, made the protocol's (kit/framework_checkpoint.py): the history
carried through a file and a folder, and a checkpoint without it refused. Through the examples:
tests/kit/adapters/."""

import pytest
import torch

from resumeproof.common import fingerprint
from resumeproof.common.errors import ResumeproofError
from resumeproof.kit import checkpoint, framework_checkpoint

HISTORY = [{"step": 1, "rows": [0], "lr": 0.1, "loss": 1.0}, {"step": 2, "rows": [1], "lr": 0.1, "loss": 0.5}]


def test_a_state_dict_becomes_a_file_that_gives_back_its_state_and_history(tmp_path):
    final = tmp_path / "checkpoint.pt"
    digest = framework_checkpoint.save(final, {"w": torch.ones(2)}, HISTORY)
    assert fingerprint.verify(final) == digest
    state, step, history = framework_checkpoint.read(final)
    assert list(state) == ["w"] and torch.equal(state["w"], torch.ones(2))  # the history's key taken out
    assert (step, history) == (2, HISTORY)


def test_a_frameworks_folder_becomes_the_checkpoint_directory_and_the_emptied_folders_go(tmp_path):
    saved = tmp_path / "out" / "scratch" / "checkpoint-2"
    saved.mkdir(parents=True)
    (saved / "model.bin").write_bytes(b"weights")
    final = tmp_path / "out" / "checkpoint.pt"
    framework_checkpoint.save(final, saved, HISTORY)
    assert sorted(p.name for p in final.iterdir()) == ["model.bin", framework_checkpoint.HISTORY_FILE]
    assert sorted(p.name for p in final.parent.iterdir()) == ["checkpoint.pt", "checkpoint.pt.sha256"]
    assert framework_checkpoint.read(final) == ({}, 2, HISTORY)


def test_a_checkpoint_without_the_history_is_refused_and_a_state_may_not_take_its_key(tmp_path):
    plain = tmp_path / "plain.pt"
    checkpoint.save(plain, {"w": torch.ones(2)})
    with pytest.raises(checkpoint.CheckpointError, match=r"plain\.pt: no protocol history"):
        framework_checkpoint.read(plain)
    folder = tmp_path / "folder" / "checkpoint.pt"
    checkpoint.save_directory(folder, lambda staged: (staged / "model.bin").write_bytes(b"weights"))
    with pytest.raises(checkpoint.CheckpointError, match=rf"{framework_checkpoint.HISTORY_FILE}: unreadable"):
        framework_checkpoint.read(folder)
    with pytest.raises(ResumeproofError, match="may not use the key 'resumeproof'"):
        framework_checkpoint.save(tmp_path / "taken.pt", {framework_checkpoint.HISTORY_KEY: 1}, HISTORY)
    assert not (tmp_path / "taken.pt").exists()
