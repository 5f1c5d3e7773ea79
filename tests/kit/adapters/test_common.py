"""The framework adapters (resumeproof.kit.adapters): the omitted parts echoed and left as built, and the
failures the frameworks keep silent refused with one line. Each example runs as a fresh process."""

import json
import random
import shutil
import subprocess
import sys
from typing import Any

import numpy as np
import pytest
import torch

from resumeproof import kit
from resumeproof.common import manifest, protocol
from resumeproof.kit.adapters import common
from resumeproof.kit.adapters.common import draws_from_globals
from tests.helpers import REPO, run_script

pytestmark = pytest.mark.xdist_group("adapters")  # one worker: the module's runs are made once

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
    if framework == "accelerate":  # the resume says which inexact configuration it depends on
        assert all(code in proc.stderr for code in ("(A1)", "(A3)", "(A4)")), proc.stderr[-2000:]
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


def test_a_fixed_lightning_resume_refuses_a_checkpoint_without_the_generators_it_restores(tmp_path, interrupted):
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


def test_the_adapters_offer_the_standard_parts_of_the_global_generators_and_the_scaler():
    generators = [common.GLOBAL_GENERATORS.index(name) for name in ("python", "numpy", "torch")]
    assert generators == [0, 1, 2] and (protocol.rng_part("cuda") in common.PARTS) == torch.cuda.is_available()
    cpu = tuple(part for part in common.STANDARD_PARTS if part != protocol.rng_part("cuda"))
    assert cpu == tuple(part for part in protocol.STANDARD_PARTS if part != protocol.PROGRESS)
    assert common.PARTS[-1] == protocol.SCALER and common.PARTS[:-1] == common.STANDARD_PARTS


def protocol_run(tmp_path, *flags: str) -> kit.Run:
    output = tmp_path / f"out{len(list(tmp_path.iterdir()))}"
    argv = ["--steps", "1", "--output", str(output), "--resume", str(tmp_path / "c"), *flags]
    return kit.Run(kit.flags.parse(argv, parts=common.PARTS), kit.RunDir.create(output))


def test_a_run_without_a_gradscaler_withdraws_the_scaler_part_and_refuses_to_omit_it(tmp_path):
    run = protocol_run(tmp_path)
    common.offer_scaler(run, torch.amp.GradScaler("cpu"))
    assert run.parts == common.PARTS
    common.offer_scaler(run, None)
    assert run.parts == common.STANDARD_PARTS
    with pytest.raises(kit.flags.FlagError, match=r"--omit=scaler: the run has no GradScaler .*nothing to omit"):
        common.offer_scaler(protocol_run(tmp_path, "--omit=scaler"), None)


# Each framework makes a GradScaler only for fp16 on a GPU; this runs an example with the CPU GradScaler in its place
# (torch.amp.GradScaler("cpu")), where the framework keeps its own: Accelerator.scaler (transformers' Trainer uses
# an Accelerator too) and Lightning's MixedPrecision plugin.
WITH_SCALER = """
import pathlib, runpy, sys
import torch
framework, script = sys.argv[1], sys.argv[2]
if framework == "lightning":
    import lightning.pytorch as pl
    from lightning.pytorch.plugins.precision import MixedPrecision
    built = pl.Trainer.__init__
    def init(self, *args, **kwargs):
        built(self, *args, plugins=[MixedPrecision("16-mixed", "cpu", scaler=torch.amp.GradScaler("cpu"))], **kwargs)
    pl.Trainer.__init__ = init
else:
    import accelerate
    built = accelerate.Accelerator.__init__
    def init(self, *args, **kwargs):
        built(self, *args, **kwargs)
        self.scaler = torch.amp.GradScaler("cpu")
    accelerate.Accelerator.__init__ = init
sys.argv = [script, *sys.argv[3:]]
sys.path.insert(0, str(pathlib.Path(script).parent))
runpy.run_path(script, run_name="__main__")
"""
FRAMEWORKS = ("accelerate", "lightning", "transformers")


@pytest.fixture(scope="module")
def with_scaler(tmp_path_factory):
    """Run one framework's example with a GradScaler: (framework, *flags) -> the finished process."""
    wrapper = tmp_path_factory.mktemp("scaler") / "with_scaler.py"
    wrapper.write_text(WITH_SCALER)

    def run(framework: str, *flags: Any) -> subprocess.CompletedProcess:
        return run_script(wrapper, framework, EXAMPLES / SCRIPTS[framework], *flags)

    return run


@pytest.fixture(scope="module")
def interrupted_with_scaler(with_scaler, tmp_path_factory):
    """One run of 3 steps per example with a GradScaler, made on first use."""
    made = {}

    def get(framework: str):
        if framework not in made:
            out = tmp_path_factory.mktemp(f"{framework}-scaler") / "interrupted"
            proc = with_scaler(framework, "--steps", "3", "--output", out)
            assert proc.returncode == 0, proc.stderr[-2000:]
            made[framework] = out
        return made[framework]

    return get


def summary_of(out) -> dict[str, Any]:
    return json.loads((out / "summary.json").read_text())


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_where_the_framework_has_a_gradscaler_the_scaler_is_saved_restored_and_omitted_on_request(
    tmp_path, with_scaler, interrupted_with_scaler, framework
):
    interrupted = interrupted_with_scaler(framework)
    first = summary_of(interrupted)
    assert protocol.SCALER in first["meta"]["parts"] and first["state"]["scaler"]["_growth_tracker"] == 3
    checkpoint = interrupted / "checkpoint.pt"
    for flags, tracker in (((), 5), (("--omit=scaler",), 2)):  # restored: 3 + 2 updates; left as built: 2
        out = tmp_path / f"resumed{len(flags)}"
        proc = with_scaler(framework, "--steps", "2", "--output", out, "--resume", checkpoint, *flags)
        assert proc.returncode == 0, proc.stderr[-2000:]
        resumed = summary_of(out)
        assert resumed["meta"]["omitted"] == [part.removeprefix("--omit=") for part in flags]
        assert resumed["state"]["scaler"]["_growth_tracker"] == tracker, flags


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_without_a_gradscaler_the_scaler_is_not_offered(interrupted, framework):
    first = summary_of(interrupted(framework).parent)
    assert protocol.SCALER not in first["meta"]["parts"] and protocol.SCALER not in first["state"]


def test_without_a_gradscaler_omitting_it_is_refused(tmp_path, interrupted):
    """The refusal is the kit's own (Run.withdraw), the same for every adapter: one framework shows it."""
    framework = "accelerate"
    proc, out = resume(tmp_path, interrupted(framework), framework, "--omit=scaler")
    last = proc.stderr.strip().splitlines()[-1]
    assert proc.returncode != 0 and not out.joinpath("summary.json").exists(), proc.stderr[-2000:]
    assert last.endswith("--omit=scaler: the run has no GradScaler (fp16 mixed precision on a GPU makes one); "
                         "there is nothing to omit"), last  # fmt: skip


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_run_with_a_gradscaler_refuses_a_checkpoint_without_its_state(tmp_path, with_scaler, interrupted, framework):
    proc = with_scaler(framework, "--steps", "2", "--output", tmp_path / "r", "--resume", interrupted(framework))
    last = proc.stderr.strip().splitlines()[-1]
    assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert "GradScaler" in last and ("scaler.pt is missing" in last or "holds no GradScaler state" in last), last
