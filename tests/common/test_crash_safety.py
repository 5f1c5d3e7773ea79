"""A process killed at any instant of a checkpoint write leaves no checkpoint.pt or a complete one.

A child writes checkpoints of about 8 MB into fresh directories, one after another, and is
SIGKILLed at a random instant (seeded); every checkpoint.pt left behind must load with the
weights_only loader and, where its sidecar was written, match it.
"""

import json
import random
import signal
import subprocess
import sys
import time

import pytest
import torch

from resumeproof.common import fingerprint
from tests.helpers import REPO

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
    time.sleep(random.Random(seed).uniform(0.2, 0.6))
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
    from resumeproof.kit import checkpoint

    checkpoint.save(path, {"w": torch.zeros(3)})
    assert seen == [True]
    fingerprint.verify(path)


def test_a_kill_between_the_sidecar_and_the_rename_lets_the_run_start_over(tmp_path):
    run = tmp_path / "run"
    train = [sys.executable, "-B", str(REPO / "train.py")]
    first = subprocess.run([*train, "--steps", "1", "--output", str(run), "--checkpoint-every", "1"], cwd=REPO)
    assert first.returncode == 0
    for name in ("step_000001.pt", "checkpoint.pt", "checkpoint.pt.sha256"):
        (run / name).unlink()  # what is left: the orphan sidecar of the first generation
    (run / ".step_000001.pt.tmp-99999").write_bytes(b"half a checkpoint")
    proc = subprocess.run([*train, "--until-step", "3", "--output", str(run), "--resume", "auto"], cwd=REPO,
                          capture_output=True, text=True)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert json.loads((run / "summary.json").read_text())["step"] == 3
