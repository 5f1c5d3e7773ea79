"""The kit's checkpoint file I/O: what `save` writes (whatever instant a kill chooses), and what `load` refuses before
anything reads the state.

Every refusal must be a CheckpointError whose message is one line naming the file and the problem,
and must leave every file it looked at byte for byte as it was. The checkpoint is the reference
trainer's after 5 updates; what its content must hold is tests/kit/test_layout.py's.
"""

import copy
import hashlib
import pickle
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from resumeproof.common import fingerprint
from resumeproof.kit import checkpoint, layout
from resumeproof.kit.layout import HISTORY, MODEL
from tests.helpers import REPO, code_that_touches
from tests.kit._checkpoint_files import CHECKPOINT, SIDECAR, files_in, replace_pickle, write_sidecar

pytestmark = pytest.mark.xdist_group("checkpoint")  # one worker: the module's runs are made once


@pytest.fixture(scope="module")
def trained_state(interrupted_run: Path) -> dict[str, Any]:
    return torch.load(interrupted_run / CHECKPOINT, map_location="cpu", weights_only=True)


@pytest.fixture
def state(trained_state: dict[str, Any]) -> dict[str, Any]:
    """A private copy of the trainer's state after 5 updates."""
    return copy.deepcopy(trained_state)


@pytest.fixture
def ckpt(tmp_path: Path, interrupted_run: Path) -> Path:
    """A private copy of the trainer's checkpoint.pt and its sidecar."""
    path = tmp_path / CHECKPOINT
    shutil.copyfile(interrupted_run / CHECKPOINT, path)
    shutil.copyfile(interrupted_run / SIDECAR, tmp_path / SIDECAR)
    return path


def refusal(path: Path) -> str:
    """Load `path`; require a one-line CheckpointError naming it and no change to any file beside it."""
    before = files_in(path.parent)
    with pytest.raises(checkpoint.CheckpointError) as caught:
        checkpoint.load(path)
    message = str(caught.value)
    assert "\n" not in message, message
    assert str(path) in message, message
    assert files_in(path.parent) == before, "a refused load changed a file"
    return message


def assert_same_tree(a: Any, b: Any, where: str = "state") -> None:
    """Equal keys in the same order, equal types, tensors equal in dtype, shape and every value."""
    assert type(a) is type(b), f"{where}: {type(a).__name__} vs {type(b).__name__}"
    if isinstance(a, torch.Tensor):
        assert a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b), where
    elif isinstance(a, dict):
        assert list(a) == list(b), where
        for key in a:
            assert_same_tree(a[key], b[key], f"{where}.{key}")
    elif isinstance(a, list | tuple):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same_tree(x, y, f"{where}[{i}]")
    else:
        assert a == b, where


# -- save: what lands on disk -------------------------------------------------------------------


def test_saved_state_loads_back_equal(tmp_path: Path, state: dict[str, Any]) -> None:
    path = tmp_path / CHECKPOINT
    digest = checkpoint.save(path, state)
    assert_same_tree(state, checkpoint.load(path))
    assert digest == hashlib.sha256(path.read_bytes()).hexdigest()


def test_sidecar_is_in_sha256sum_format_and_matches_sha256sum(tmp_path: Path, state: dict[str, Any]) -> None:
    digest = checkpoint.save(tmp_path / CHECKPOINT, state)
    text = (tmp_path / SIDECAR).read_text(encoding="ascii")
    assert re.fullmatch(r"[0-9a-f]{64}  checkpoint\.pt\n", text), repr(text)
    assert text == f"{digest}  {CHECKPOINT}\n"
    computed = subprocess.run(["sha256sum", CHECKPOINT], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert computed.stdout == text
    checked = subprocess.run(
        ["sha256sum", "--check", "--strict", SIDECAR], cwd=tmp_path, capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout == f"{CHECKPOINT}: OK\n"


def test_save_leaves_no_temporary_file(tmp_path: Path, state: dict[str, Any]) -> None:
    checkpoint.save(tmp_path / CHECKPOINT, state)
    checkpoint.save(tmp_path / CHECKPOINT, state)  # and replacing a checkpoint leaves none either
    assert sorted(p.name for p in tmp_path.iterdir()) == [CHECKPOINT, SIDECAR]


def test_state_the_weights_only_loader_refuses_is_never_written(tmp_path: Path, state: dict[str, Any]) -> None:
    path = tmp_path / CHECKPOINT
    checkpoint.save(path, state)
    before = files_in(tmp_path)
    state[HISTORY][0]["noise"] = np.zeros(2)  # a numpy array: weights_only refuses it
    with pytest.raises(checkpoint.CheckpointError, match="weights_only") as caught:
        checkpoint.save(path, state)
    assert str(path) in str(caught.value)
    assert files_in(tmp_path) == before  # the earlier checkpoint and sidecar stand, no temporary file


# -- save: a kill at any instant leaves no checkpoint.pt or a complete one ------------------------------------------
# A child writes checkpoints of about 8 MB into fresh directories, one after another, and is SIGKILLed at a random
# instant (seeded); every checkpoint.pt left behind must load with the weights_only loader and, where its sidecar
# was written, match it.
WRITER = """
import sys, torch
from pathlib import Path
from resumeproof.kit import checkpoint
state = {"w": torch.arange(1_000_000, dtype=torch.float64), "step": 3}
print("ready", flush=True)
for i in range(10_000):
    directory = Path(sys.argv[1]) / f"{i:05d}"
    directory.mkdir()
    checkpoint.save(directory / "checkpoint.pt", state)
"""


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_checkpoint_killed_mid_write_is_absent_or_complete(tmp_path, seed):
    child = subprocess.Popen(
        [sys.executable, "-B", "-c", WRITER, str(tmp_path)], cwd=REPO, stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None and child.stdout.readline() == "ready\n"
    # After the first write is complete (its next directory made), whatever the machine's load: a fixed sleep alone
    # landed before it on a busy machine
    deadline = time.monotonic() + 60
    while not (tmp_path / "00001").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(random.Random(seed).uniform(0.0, 0.4))
    child.send_signal(signal.SIGKILL)
    child.wait()
    directories = sorted(tmp_path.iterdir())
    assert len(directories) >= 2  # the kill landed after some complete writes, during a later one
    for directory in directories:
        path = directory / "checkpoint.pt"
        if not path.exists():
            continue  # killed before the rename: no new file
        state = torch.load(path, map_location="cpu", weights_only=True)
        assert torch.equal(state["w"], torch.arange(1_000_000, dtype=torch.float64)), path
        if fingerprint.sidecar(path).exists():
            fingerprint.verify(path)
    complete = [d for d in directories if fingerprint.sidecar(d / "checkpoint.pt").exists()]
    assert len(complete) >= len(directories) - 1  # only the write in flight may be unfinished


def test_the_sidecar_is_in_place_before_the_checkpoint_takes_its_name(tmp_path, monkeypatch):
    """So no kill can leave a checkpoint under its final name without its fingerprint."""
    path, seen = tmp_path / "checkpoint.pt", []
    real_replace = fingerprint.os.replace

    def replace(src, dst):
        if str(dst) == str(path):
            seen.append(fingerprint.sidecar(path).exists())
        real_replace(src, dst)

    monkeypatch.setattr(fingerprint.os, "replace", replace)
    checkpoint.save(path, {"w": torch.zeros(3)})
    assert seen == [True]
    fingerprint.verify(path)


# -- refusals: damaged bytes --------------------------------------------------------------------


@pytest.mark.parametrize("sidecar", ["original", "rewritten"])
def test_checkpoint_cut_at_any_4_kib_boundary_is_refused(tmp_path: Path, interrupted_run: Path, sidecar: str) -> None:
    """With its original sidecar the sha256 refuses the cut file; with a sidecar rewritten to match
    the cut bytes, the torch/zip layer must refuse it on its own."""
    raw = (interrupted_run / CHECKPOINT).read_bytes()
    cuts = [*range(0, len(raw), 4096), len(raw) - 1]  # every 4 KiB boundary below the size, and one byte short
    assert len(cuts) >= 5
    for size in cuts:
        path = tmp_path / f"cut-{size}" / CHECKPOINT
        path.parent.mkdir()
        path.write_bytes(raw[:size])
        if sidecar == "rewritten":
            write_sidecar(path)
        else:
            shutil.copyfile(interrupted_run / SIDECAR, path.parent / SIDECAR)
        message = refusal(path)
        if size == 0:
            assert "size 0 bytes" in message, message
        elif sidecar == "original":
            assert "sha256" in message, message
        else:
            assert "not a readable torch checkpoint" in message, message


def test_any_flipped_byte_is_caught_by_the_sha256(ckpt: Path) -> None:
    raw = ckpt.read_bytes()
    rng = random.Random(20260529)
    for position in rng.sample(range(len(raw)), 300):
        damaged = bytearray(raw)
        damaged[position] ^= 1 << rng.randrange(8)
        ckpt.write_bytes(damaged)
        message = refusal(ckpt)
        assert "sha256" in message and "does not match" in message, (position, message)


def test_empty_checkpoint_is_refused(tmp_path: Path) -> None:
    path = tmp_path / CHECKPOINT
    path.write_bytes(b"")
    write_sidecar(path)  # even with a matching fingerprint
    assert "size 0 bytes" in refusal(path)


@pytest.mark.parametrize("kind", ["nonexistent", "directory"])
def test_resume_path_that_is_not_a_file_is_refused(tmp_path: Path, kind: str) -> None:
    path = tmp_path / CHECKPOINT
    if kind == "directory":
        path.mkdir()
    assert "no such checkpoint file" in refusal(path)


# -- refusals: the sidecar ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sidecar", "problem"),
    [
        pytest.param(None, "fingerprint file checkpoint.pt.sha256 is missing", id="missing"),
        pytest.param(lambda digest: "", "sha256sum format", id="empty"),
        pytest.param(lambda digest: "not a digest\n", "sha256sum format", id="not-a-digest"),
        pytest.param(lambda digest: f"{digest}\n", "sha256sum format", id="digest-without-file-name"),
        pytest.param(lambda digest: f"{digest} checkpoint.pt\n", "sha256sum format", id="one-space"),
        pytest.param(lambda digest: f"{digest[1:]}  checkpoint.pt\n", "sha256sum format", id="63-hex-digits"),
        pytest.param(lambda digest: f"{digest}  checkpoint.pt\n" * 2, "sha256sum format", id="two-lines"),
        pytest.param(
            lambda digest: f"{digest}  other.pt\n",
            "names 'other.pt', expected 'checkpoint.pt'",
            id="names-another-file",
        ),
        pytest.param(
            lambda digest: f"{digest}  runs/checkpoint.pt\n", "names 'runs/checkpoint.pt'", id="names-another-path"
        ),
    ],
)
def test_bad_sidecar_is_refused(ckpt: Path, sidecar: Callable[[str], str] | None, problem: str) -> None:
    side = ckpt.with_name(SIDECAR)
    digest = hashlib.sha256(ckpt.read_bytes()).hexdigest()
    if sidecar is None:
        side.unlink()
    else:
        side.write_text(sidecar(digest), encoding="ascii")
    assert problem in refusal(ckpt)


# -- refusals: pickles that are not plain data --------------------------------------------------


@pytest.mark.parametrize("how", ["os.system", "builtins.exec"])
def test_pickle_that_would_run_code_is_refused_unexecuted(tmp_path: Path, how: str) -> None:
    # Control: the payload is live, so an absent marker below means the loader refused it unexecuted.
    control = tmp_path / "CONTROL"
    pickle.loads(pickle.dumps(code_that_touches(how, control)))
    assert control.exists()

    marker = tmp_path / "MARKER"
    path = tmp_path / CHECKPOINT
    torch.save({layout.FORMAT_KEY: layout.FORMAT, MODEL: code_that_touches(how, marker)}, path)
    write_sidecar(path)  # a valid fingerprint: only the weights_only loader stands in the way
    message = refusal(path)
    assert "weights_only" in message, message
    assert not marker.exists()


def test_torch_file_holding_a_list_is_refused(tmp_path: Path) -> None:
    path = tmp_path / CHECKPOINT
    torch.save([torch.zeros(2)], path)
    write_sidecar(path)
    assert "holds a list, expected a dict" in refusal(path)


@pytest.mark.parametrize(
    "data_pkl",
    [
        pytest.param(b"\x80\x02a.", id="stack-underflow"),  # APPEND with nothing on the stack
        pytest.param(b"\x80\x02J\x01\x00", id="opcode-cut-short"),  # BININT with 2 of its 4 bytes
        pytest.param(b"\x80\x02K\x01K\x02s.", id="setitem-on-an-int"),
    ],
)
def test_malformed_pickle_stream_is_refused_as_checkpoint_error(tmp_path: Path, ckpt: Path, data_pkl: bytes) -> None:
    path = tmp_path / "malformed" / CHECKPOINT
    path.parent.mkdir()
    replace_pickle(ckpt, path, data_pkl)
    write_sidecar(path)
    assert "not a readable torch checkpoint" in refusal(path)
