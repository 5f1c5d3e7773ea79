"""loss.jsonl (common/losslog.py): appended, never rewritten; a successor's start line names the steps it replays,
and the last record of a step is the authoritative one. train.py's replays: tests/kit/test_rundir.py."""

from resumeproof.common import losslog


def record(step: int, loss: float) -> dict:
    return {"step": step, "rows": [step], "lr": 0.1, "loss": loss}


def test_a_line_cut_by_a_kill_is_ended_never_rewritten(tmp_path):
    log = tmp_path / losslog.NAME
    losslog.append(log, {"step": 1, "rows": [0], "lr": 0.1, "loss": 1.0})
    with open(log, "ab") as f:
        f.write(b'{"step": 2, "ro')  # the kill
    cut = log.read_bytes()
    assert losslog.start(log, 1) == set()
    assert log.read_bytes().startswith(cut + b"\n")
    assert losslog.read(log)[1] == 1 and sorted(losslog.authoritative(log)) == [1]


def test_a_successor_supersedes_the_steps_logged_beyond_its_checkpoint_and_its_records_win(tmp_path):
    log = tmp_path / losslog.NAME
    assert losslog.start(log, 0) == set()
    for step in (1, 2, 3):
        losslog.append(log, record(step, float(step)))
    assert losslog.start(log, 1, pid=7) == {2, 3}  # killed after logging 3, resumed from the checkpoint at 1
    losslog.append(log, {**record(2, 20.0), "replay": True})
    entries, broken = losslog.read(log)
    assert broken == 0 and entries[4] == {"event": "start", "from_step": 1, "superseded_steps": [2, 3], "pid": 7}
    assert {step: r["loss"] for step, r in losslog.authoritative(log).items()} == {1: 1.0, 2: 20.0, 3: 3.0}
