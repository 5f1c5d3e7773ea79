"""A deliberate pivot on resume (kit/pivot.py): the state kept, the lr changed and recorded, and only what the flag
allows; a pivot without a resume is refused (kit/resume.py). The verifier's view of a pivoted run is
tests/e2e/test_verify_e2e.py's."""

import pytest

from resumeproof.common import losslog
from tests.helpers import run_train, summary


def test_a_pivot_keeps_the_state_changes_the_lr_and_is_recorded(tmp_path, interrupted_run):
    run = tmp_path / "pivoted"
    proc = run_train(
        "--steps", "5", "--output", run, "--resume", interrupted_run / "checkpoint.pt", "--pivot", "lr=0.01"
    )
    assert proc.returncode == 0, proc.stderr
    before, after = summary(interrupted_run), summary(run)
    assert after["history"][:5] == before["history"]  # the history is carried, not reset
    first = after["history"][5]
    assert first["pivot"] == {"lr": [0.03, 0.01]}
    assert first["lr"] == pytest.approx(before["next"]["lr"] / 3, rel=1e-15)  # the schedule keeps its place
    assert after["meta"]["provenance"] == [{"step": 5, "pivot": {"lr": [0.03, 0.01]}}]
    log = losslog.read(run / losslog.NAME)[0]
    assert log[0]["event"] == "start" and log[0]["pivot"] == {"lr": [0.03, 0.01]}
    again = run_train("--steps", "1", "--output", tmp_path / "plain", "--resume", run / "checkpoint.pt")
    assert again.returncode == 2 and "written by another experiment: lr=0.01 (now 0.03)" in again.stderr
    args = ("--steps", "1", "--output", tmp_path / "same", "--resume", run / "checkpoint.pt", "--pivot", "lr=0.01")
    same = run_train(*args)
    assert same.returncode == 0, same.stderr
    assert summary(tmp_path / "same")["meta"]["provenance"] == after["meta"]["provenance"]  # no second pivot


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--pivot", "dropout=0.1"), "only lr can change on resume"),
        (("--pivot", "lr=fast"), "is not a number"),
        (("--pivot", "lr=0.01"), "--pivot changes a resumed run"),
    ],
)
def test_a_pivot_is_only_what_the_flag_allows(tmp_path, args, message):
    proc = run_train("--steps", "1", "--output", tmp_path / "run", *args)
    assert proc.returncode == 2 and message in proc.stderr
    assert not (tmp_path / "run").exists()
