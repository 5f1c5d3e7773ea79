"""The framework adapters (resumeproof.kit.adapters): the omitted parts echoed and left as built, and the
failures the frameworks keep silent refused with one line. Each example runs as a fresh process."""

import json
import random
import shutil
import subprocess
import sys

import numpy as np
import pytest
import torch

from resumeproof.common import manifest
from resumeproof.kit.adapters.common import draws_from_globals
from tests.helpers import REPO, run_script

EXAMPLES = REPO / "examples"
SCRIPTS = {
    "plain": "plain_dataloader.py", "accelerate": "accelerate_example.py", "lightning": "lightning_example.py",
    "transformers": "transformers_example.py",
}  # fmt: skip


@pytest.fixture(scope="module")
def interrupted(tmp_path_factory):
    """One run of 3 steps per example (mid-epoch), made on first use."""
    made = {}

    def get(framework: str):
        if framework not in made:
            out = tmp_path_factory.mktemp(framework) / "interrupted"
            proc = run_script(EXAMPLES / SCRIPTS[framework], "--steps", "3", "--output", out)
            assert proc.returncode == 0, proc.stderr[-2000:]
            made[framework] = out / "checkpoint.pt"
        return made[framework]

    return get


def resume(tmp_path, checkpoint, framework, *flags):
    out = tmp_path / "resumed"
    proc = run_script(EXAMPLES / SCRIPTS[framework], "--steps", "2", "--output", out, "--resume", checkpoint, *flags)
    return proc, out


@pytest.mark.parametrize("framework", sorted(SCRIPTS))
def test_omitted_parts_are_echoed_and_the_omitted_optimizer_starts_as_built(tmp_path, interrupted, framework):
    proc, out = resume(tmp_path, interrupted(framework), framework, "--omit=optimizer,rng-numpy")
    assert proc.returncode == 0, proc.stderr[-2000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["meta"]["omitted"] == ["optimizer", "rng-numpy"]
    assert summary["step"] == 5 and [r["step"] for r in summary["history"]] == [1, 2, 3, 4, 5]
    steps = {int(s["step"]) for s in summary["state"]["optimizer"]["state"].values()}
    assert steps == {2}, steps  # AdamW counted only this process's updates: its saved moments were not loaded


def copy_checkpoint(source, tmp_path):
    """A copy of a checkpoint folder, to be broken and then signed again, as a tampering user would."""
    copy = tmp_path / "in" / "checkpoint.pt"
    shutil.copytree(source, copy)
    manifest.write(copy)  # its sidecar, naming the same files
    return copy


@pytest.mark.parametrize("damage", ["missing", "unreadable"])
def test_accelerate_refuses_a_resume_whose_generators_load_state_silently_skipped(tmp_path, interrupted, damage):
    checkpoint = copy_checkpoint(interrupted("accelerate"), tmp_path)
    rng_file = checkpoint / "random_states_0.pkl"
    if damage == "missing":
        rng_file.unlink()
    else:
        rng_file.write_bytes(b"not a checkpoint")
    manifest.write(checkpoint)  # a consistent folder: only the generators are wrong
    proc, out = resume(tmp_path, checkpoint, "accelerate")
    assert proc.returncode != 0 and not (out / "summary.json").exists()
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("accelerate_example.py: error:") and "random_states_0.pkl" in last, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    assert ("missing" if damage == "missing" else "did not restore") in last


def test_accelerate_resumes_without_the_generators_when_every_rng_part_is_omitted(tmp_path, interrupted):
    checkpoint = copy_checkpoint(interrupted("accelerate"), tmp_path)
    (checkpoint / "random_states_0.pkl").unlink()
    manifest.write(checkpoint)
    proc, _ = resume(tmp_path, checkpoint, "accelerate", "--omit-rng-restore")
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_transformers_refuses_a_resume_without_its_rng_file(tmp_path, interrupted):
    checkpoint = copy_checkpoint(interrupted("transformers"), tmp_path)
    (checkpoint / "rng_state.pth").unlink()
    manifest.write(checkpoint)
    proc, _ = resume(tmp_path, checkpoint, "transformers")
    last = proc.stderr.strip().splitlines()[-1]
    assert proc.returncode != 0 and "rng_state.pth is missing" in last, proc.stderr[-2000:]


def test_lightning_refuses_to_omit_a_data_position_its_loader_does_not_save(tmp_path, interrupted):
    proc, _ = resume(tmp_path, interrupted("lightning"), "lightning", "--omit=data")
    last = proc.stderr.strip().splitlines()[-1]
    assert proc.returncode != 0 and "--omit=data: the train DataLoader saves no position" in last, proc.stderr[-2000:]


def test_a_checkpoint_folder_changed_after_it_was_written_is_refused_before_the_framework_reads_it(
    tmp_path, interrupted
):
    checkpoint = copy_checkpoint(interrupted("transformers"), tmp_path)
    (checkpoint / "optimizer.pt").write_bytes(b"changed")
    proc, _ = resume(tmp_path, checkpoint, "transformers")
    last = proc.stderr.strip().splitlines()[-1]
    assert proc.returncode != 0 and "optimizer.pt: sha256" in last and "refusing to resume" in last, proc.stderr


def test_the_resumes_say_which_inexact_configuration_they_depend_on(tmp_path, interrupted):
    proc, _ = resume(tmp_path, interrupted("accelerate"), "accelerate")
    assert proc.returncode == 0, proc.stderr[-2000:]
    for code in ("(A1)", "(A3)", "(A4)"):
        assert code in proc.stderr
    fixed, _ = resume(tmp_path / "fixed", interrupted("lightning"), "lightning", "--fix", "user")
    assert fixed.returncode != 0  # a checkpoint without GlobalRngState's state cannot be resumed with it
    assert "GlobalRngState" in fixed.stderr


def test_nothing_but_a_script_imports_a_framework():
    code = (
        "import sys, resumeproof.kit, resumeproof.cli, resumeproof.verify.verification\n"
        "print(sorted({'accelerate', 'lightning', 'transformers'} & set(sys.modules)))"
    )
    proc = subprocess.run([sys.executable, "-B", "-c", code], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0 and proc.stdout.strip() == "[]", proc.stdout + proc.stderr


def test_draws_from_globals_tells_augmentation_from_the_globals_and_leaves_them_as_they_were():
    class Global:
        def __getitem__(self, i):
            return random.random() + np.random.random()

    class Private:
        def __getitem__(self, i):
            return torch.rand((), generator=torch.Generator().manual_seed(i))

    before = (random.getstate(), np.random.get_state()[1].copy(), torch.get_rng_state())
    assert draws_from_globals(Global()) and not draws_from_globals(Private())
    after = (random.getstate(), np.random.get_state()[1], torch.get_rng_state())
    assert before[0] == after[0] and (before[1] == after[1]).all() and torch.equal(before[2], after[2])
