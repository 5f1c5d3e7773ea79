"""What every adapter does the same way (kit/adapters/common.py, and the kit beneath it), each example a fresh
process: the omitted parts echoed and left as built, the GradScaler offered only where the framework has one, a
checkpoint folder changed after it was written refused before the framework reads it. What one framework's adapter
does of its own is in test_accelerate.py, test_lightning.py, test_transformers.py."""

import os
import random
import subprocess
import sys
from typing import Any

import numpy as np
import pytest
import torch

from resumeproof import kit
from resumeproof.common import protocol
from resumeproof.kit.adapters import common
from resumeproof.kit.adapters.common import draws_from_globals
from tests.helpers import EXAMPLES, FRAMEWORK_EXAMPLES, REPO, summary


def each(frameworks) -> list:
    """The frameworks as parameters, each in the xdist group of its example's runs (conftest.py makes each run once on
    the worker that asks): one worker per framework, the four frameworks spread over both workers."""
    return [pytest.param(name, marks=pytest.mark.xdist_group(f"adapters-{name}")) for name in frameworks]


@pytest.mark.parametrize("framework", each(sorted(FRAMEWORK_EXAMPLES)))
def test_omitted_parts_are_echoed_and_the_omitted_optimizer_starts_as_built(interrupted, framework, resumed):
    proc, out = resumed(interrupted(framework), framework, "--omit=optimizer,rng-numpy")
    assert proc.returncode == 0, proc.stderr[-2000:]
    if framework == "accelerate":  # the resume says which inexact configuration it depends on
        assert all(code in proc.stderr for code in ("(A1)", "(A3)", "(A4)")), proc.stderr[-2000:]
    written = summary(out)
    assert written["meta"]["omitted"] == ["optimizer", "rng-numpy"]
    assert written["step"] == 5 and [r["step"] for r in written["history"]] == [1, 2, 3, 4, 5]
    steps = {int(s["step"]) for s in written["state"]["optimizer"]["state"].values()}
    assert steps == {2}, steps  # AdamW counted only this process's updates: its saved moments were not loaded


@pytest.mark.xdist_group("adapters-transformers")
def test_a_checkpoint_folder_changed_after_it_was_written_is_refused_before_the_framework_reads_it(
    interrupted, resumed, signed_copy
):
    checkpoint = signed_copy(interrupted("transformers"))
    (checkpoint / "optimizer.pt").write_bytes(b"changed")
    proc, _ = resumed(checkpoint, "transformers")
    last = proc.stderr.strip().splitlines()[-1]
    assert proc.returncode != 0 and "optimizer.pt: sha256" in last and "refusing to resume" in last, proc.stderr


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
# an Accelerator too) and Lightning's MixedPrecision plugin. The example imports its neighbours (experiment.py), which
# a script run directly finds beside it: PYTHONPATH names examples/.
WITH_SCALER = """
import runpy, sys
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
runpy.run_path(script, run_name="__main__")
"""


FRAMEWORKS = ("accelerate", "lightning", "transformers")


@pytest.fixture(scope="module")
def with_scaler(tmp_path_factory):
    """Run one framework's example with a GradScaler: (framework, *flags) -> the finished process."""
    wrapper = tmp_path_factory.mktemp("scaler") / "with_scaler.py"
    wrapper.write_text(WITH_SCALER)

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(EXAMPLES), os.environ.get("PYTHONPATH")]))}

    def run(framework: str, *flags: Any) -> subprocess.CompletedProcess:
        argv = [sys.executable, "-B", str(wrapper), framework, str(FRAMEWORK_EXAMPLES[framework]), *map(str, flags)]
        return subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=REPO, env=env)

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


@pytest.mark.parametrize("framework", each(FRAMEWORKS))
def test_where_the_framework_has_a_gradscaler_the_scaler_is_saved_restored_and_omitted_on_request(
    tmp_path, with_scaler, interrupted_with_scaler, framework
):
    interrupted = interrupted_with_scaler(framework)
    first = summary(interrupted)
    assert protocol.SCALER in first["meta"]["parts"] and first["state"]["scaler"]["_growth_tracker"] == 3
    checkpoint = interrupted / "checkpoint.pt"
    for flags, tracker in (((), 5), (("--omit=scaler",), 2)):  # restored: 3 + 2 updates; left as built: 2
        out = tmp_path / f"resumed{len(flags)}"
        proc = with_scaler(framework, "--steps", "2", "--output", out, "--resume", checkpoint, *flags)
        assert proc.returncode == 0, proc.stderr[-2000:]
        resumed = summary(out)
        assert resumed["meta"]["omitted"] == [part.removeprefix("--omit=") for part in flags]
        assert resumed["state"]["scaler"]["_growth_tracker"] == tracker, flags


@pytest.mark.parametrize("framework", each(FRAMEWORKS))
def test_without_a_gradscaler_the_scaler_is_not_offered(interrupted, framework):
    first = summary(interrupted(framework).parent)
    assert protocol.SCALER not in first["meta"]["parts"] and protocol.SCALER not in first["state"]


@pytest.mark.xdist_group("adapters-accelerate")
def test_without_a_gradscaler_omitting_it_is_refused(interrupted, resumed):
    """The refusal is the kit's own (Run.withdraw), the same for every adapter: one framework shows it."""
    framework = "accelerate"
    proc, out = resumed(interrupted(framework), framework, "--omit=scaler")
    last = proc.stderr.strip().splitlines()[-1]
    assert proc.returncode != 0 and not out.joinpath("summary.json").exists(), proc.stderr[-2000:]
    said = (
        "--omit=scaler: the run has no GradScaler (fp16 mixed precision on a GPU makes one); there is nothing to omit"
    )
    assert last.endswith(said), last


@pytest.mark.parametrize("framework", each(FRAMEWORKS))
def test_a_run_with_a_gradscaler_refuses_a_checkpoint_without_its_state(tmp_path, with_scaler, interrupted, framework):
    proc = with_scaler(framework, "--steps", "2", "--output", tmp_path / "r", "--resume", interrupted(framework))
    last = proc.stderr.strip().splitlines()[-1]
    assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert "GradScaler" in last and ("scaler.pt is missing" in last or "holds no GradScaler state" in last), last
