"""kit.Run: the flags carry the declared parts into the summary, a withdrawn part is refused and left out, and the
run directory (the strategy) is what writes."""

import json
from pathlib import Path

import pytest

from resumeproof import kit
from resumeproof.common import protocol
from resumeproof.kit.flags import FlagError

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
