"""The original run a fork's checkpoint comes from, read from the files beside it: the fork point its name or its
summary says, the history the summary holds and the updates loss.jsonl logged after it; a summary that cannot be read
is refused, never passed over."""

import json

import pytest

from resumeproof.common import losslog
from resumeproof.common.errors import ResumeproofError
from resumeproof.common.protocol import PROTOCOL
from resumeproof.verify.fork import original as fork_original


def record(step: int, loss: float) -> dict:
    return {"step": step, "rows": [step], "lr": 0.1, "loss": loss}


def run_dir(tmp_path, steps: int = 4, logged: tuple[int, ...] = ()):
    """A run directory: summary.json of `steps` updates, and loss.jsonl with those and `logged` ones after them."""
    history = [record(s, 1.0 / s) for s in range(1, steps + 1)]
    summary = {"protocol": PROTOCOL, "step": steps, "history": history, "state": {}, "next": {"lr": 0.1}, "eval": {}}
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    log = tmp_path / losslog.NAME
    losslog.append(log, {"event": "start", "from_step": 0, "superseded_steps": []})
    for entry in [*history, *({**record(s, 9.0), "replay": True} for s in logged)]:
        losslog.append(log, entry)
    return tmp_path


def test_a_generation_names_the_fork_point_and_loss_jsonl_adds_the_updates_after_the_summary(tmp_path):
    original = fork_original.read(run_dir(tmp_path, 4, logged=(5, 6)) / "step_000002.pt")
    assert original.step == 2 and original.sources == ("summary.json", "loss.jsonl")
    assert sorted(original.records) == [1, 2, 3, 4, 5, 6]
    assert original.records[5] == record(5, 9.0)  # the log's replay mark is the log's, not the update's
    assert original.records[3] == record(3, 1.0 / 3)  # the summary's where it holds the step
    assert [r["step"] for r in original.after(2, 3)] == [3, 4, 5]


def test_a_final_checkpoint_is_at_its_summarys_step_and_a_lone_file_at_no_known_step(tmp_path):
    assert fork_original.read(run_dir(tmp_path, 4) / "checkpoint.pt").step == 4
    alone = fork_original.read(tmp_path / "elsewhere" / "model.pt")
    assert (alone.step, alone.records, alone.sources) == (None, {}, ())


def test_the_continuation_stops_at_the_first_update_the_files_do_not_hold(tmp_path):
    original = fork_original.read(run_dir(tmp_path, 3) / "step_000001.pt")
    assert [r["step"] for r in original.after(1, 5)] == [2, 3]
    assert original.after(3, 5) == []


def test_a_summary_beside_the_checkpoint_that_cannot_be_read_is_refused(tmp_path):
    (tmp_path / "summary.json").write_text("{not json")
    with pytest.raises(ResumeproofError, match=r"step_000002.pt: the run beside it: .*summary.json: not valid JSON"):
        fork_original.read(tmp_path / "step_000002.pt")
