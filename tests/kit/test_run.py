"""kit.Run: the flags carry the declared parts into the summary, a withdrawn part is refused and left out, and the
run directory (the strategy) is what writes. A run kit.start opened ends a kit error at an entry point with one line
and exit 2, and leaves sys.excepthook as it was."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from resumeproof import kit
from resumeproof.common import protocol
from resumeproof.kit.flags import FlagError
from resumeproof.kit.run import entry

PARTS = ("model", "optimizer", "ema", "rng-torch", "scaler")


def run_of(output: Path, *flags: str, parts: tuple[str, ...] = PARTS) -> kit.Run:
    args = kit.flags.parse(["--steps", "2", "--output", str(output), *flags], parts=parts)
    return kit.Run(args, kit.RunDir.create(output))


def summary_meta(output: Path) -> dict:
    return json.loads((output / protocol.SUMMARY).read_text())["meta"]


def finished(run: kit.Run, meta: dict | None = None) -> dict:
    for step in range(2):
        run.record(rows=[step], lr=0.1, loss=1.0)
    run.finish({"weights": [1.0]}, state={}, eval={}, lr=0.1, meta=meta)
    return summary_meta(run.output)


def test_the_summary_declares_the_parts_the_flags_were_given_and_echoes_the_omitted_ones(tmp_path):
    run = run_of(tmp_path / "a", "--resume", "c", "--omit=ema,model")
    meta = finished(run)
    assert meta[protocol.META_PARTS] == list(PARTS) and meta[protocol.META_OMITTED] == ["ema", "model"]


def test_two_runs_in_one_process_each_declare_their_own_parts(tmp_path):
    """No module-wide memory: the last flags parsed in a process say nothing about another run."""
    first = run_of(tmp_path / "a")
    second = run_of(tmp_path / "b", parts=("model", "data"))
    assert finished(first)[protocol.META_PARTS] == list(PARTS)
    assert finished(second)[protocol.META_PARTS] == ["model", "data"]


def test_a_withdrawn_part_is_left_out_of_the_summary_and_omitting_it_is_refused(tmp_path):
    run = run_of(tmp_path / "a")
    run.withdraw(protocol.SCALER, "the run has no GradScaler")
    assert finished(run)[protocol.META_PARTS] == ["model", "optimizer", "ema", "rng-torch"]
    omitting = run_of(tmp_path / "b", "--resume", "c", "--omit=scaler")
    with pytest.raises(FlagError, match="--omit=scaler: the run has no GradScaler; there is nothing to omit"):
        omitting.withdraw(protocol.SCALER, "the run has no GradScaler")


def test_the_callers_meta_comes_after_what_the_flags_say(tmp_path):
    meta = finished(run_of(tmp_path / "a"), meta={"argv": ["x"], protocol.META_PARTS: ["model"]})
    assert meta["argv"] == ["x"] and meta[protocol.META_PARTS] == ["model"]  # a caller's own parts win


def test_finish_writes_the_checkpoint_with_its_history_through_the_run_directory(tmp_path):
    run = run_of(tmp_path / "a")
    finished(run)
    state = kit.load_checkpoint(run.output / protocol.CHECKPOINT)
    assert state["weights"] == [1.0] and state["resumeproof"]["step"] == 2
    assert [record["rows"] for record in state["resumeproof"]["history"]] == [[0], [1]]


def test_a_run_that_recorded_too_few_or_too_many_updates_is_refused(tmp_path):
    run = run_of(tmp_path / "a")
    run.record(rows=[0], lr=0.1, loss=1.0)
    with pytest.raises(kit.ResumeproofError, match="recorded 1 updates, expected 2"):
        run.finish({}, state={}, eval={}, lr=0.1)
    run.record(rows=[1], lr=0.1, loss=1.0)
    with pytest.raises(kit.ResumeproofError, match="an update beyond step 2"):
        run.record(rows=[2], lr=0.1, loss=1.0)


# kit.start's runs: a kit error at an entry point is one line and exit 2, without a process-wide sys.excepthook.
ENDS_WITH = """
import os, sys
from resumeproof import kit
hook = sys.excepthook
run = kit.start(("model",), float64=False)
assert sys.excepthook is hook, "kit.start replaced sys.excepthook"
if os.environ["RAISE"] == "kit":
    run.record(rows=[0], lr=0.1, loss=1.0)
    run.record(rows=[1], lr=0.1, loss=1.0)  # beyond --steps 1: the kit refuses it
raise ValueError("the trainer's own bug")
"""


@pytest.fixture
def trainer(tmp_path) -> Path:
    script = tmp_path / "my_train.py"
    script.write_text(ENDS_WITH)
    return script


def ended(trainer: Path, output: Path, raising: str) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-B", str(trainer), "--steps", "1", "--output", str(output)]
    return subprocess.run(argv, capture_output=True, text=True, env={**os.environ, "RAISE": raising}, timeout=120)


def test_a_kit_error_in_a_started_trainer_is_one_line_and_exit_2(trainer, tmp_path):
    proc = ended(trainer, tmp_path / "out", "kit")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == "my_train.py: error: an update beyond step 1: the run must stop there\n"


def test_another_exception_keeps_pythons_traceback_and_the_hook_stays_the_trainers(trainer, tmp_path):
    proc = ended(trainer, tmp_path / "out", "other")
    assert proc.returncode == 1 and "kit.start replaced" not in proc.stderr, proc.stderr
    assert proc.stderr.startswith("Traceback") and proc.stderr.endswith("ValueError: the trainer's own bug\n")


def test_kit_start_refuses_in_one_line_and_leaves_sys_excepthook_alone(tmp_path, capsys):
    hook = sys.excepthook
    (tmp_path / "out").mkdir()
    with pytest.raises(SystemExit) as exited:
        kit.start(("model",), ["--steps", "1", "--output", str(tmp_path / "out")], float64=False)
    assert exited.value.code == 2 and sys.excepthook is hook
    assert capsys.readouterr().err.endswith(
        f"error: --output {tmp_path / 'out'}: already exists; refusing to touch it\n"
    )


def test_an_adapters_hook_ends_a_started_run_and_raises_on_any_other(tmp_path, capsys):
    class Hook:  # as an adapter's callback is: it holds the run, and a framework calls it
        def __init__(self, run: kit.Run) -> None:
            self.run = run

        @entry
        def on_load(self) -> None:
            raise kit.ResumeproofError("the checkpoint holds no generator state")

    started = kit.start(("model",), ["--steps", "1", "--output", str(tmp_path / "a")], float64=False)
    with pytest.raises(SystemExit) as exited:
        Hook(started).on_load()
    assert exited.value.code == 2 and capsys.readouterr().err.endswith(
        ": error: the checkpoint holds no generator state\n"
    )
    with pytest.raises(kit.ResumeproofError, match="no generator state"):  # the caller's own error path decides
        Hook(run_of(tmp_path / "b")).on_load()
    started.close()
