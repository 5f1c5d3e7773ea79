"""A fork's report: the verdict line says fair, not fair and why, or why it could not complete; the notes say what
the verdict rests on and which override changed nothing."""

import io
from pathlib import Path

from rich.console import Console

from resumeproof.common.protocol import CheckId, CheckKind
from resumeproof.verify.fork import report as fork_report
from resumeproof.verify.fork.result import BranchResult, Fork, Point
from resumeproof.verify.vocabulary.findings import Check

CURVE = (Point(step=4, loss=0.9, lr=0.1),)
BRANCHES = (
    BranchResult(name="control", overrides=(), curve=CURVE),
    BranchResult(name="same", overrides=("--pivot", "lr=0.03"), curve=CURVE),
)


def fork(passed: bool, continuation: int = 0, error: str | None = None) -> Fork:
    check = Check(
        id=CheckId(kind=CheckKind.INPUTS, trajectory="same"), name="inputs", passed=passed, detail="x[1] differs"
    )
    given = {"checkpoint": Path("c.pt"), "sha256": None, "train_cmd": "t", "steps": 1, "fork_step": 3}
    return Fork(error=error, continuation=continuation, branches=BRANCHES, checks=(check,), **given)


def test_the_verdict_says_fair_not_fair_with_its_reasons_or_could_not_complete():
    assert fork_report.verdict(fork(True)).startswith("[green]FAIR:[/] every branch starts from the control's state")
    unfair = fork_report.verdict(fork(False))
    assert unfair.startswith("[red]NOT FAIR:[/] x[1] differs.") and unfair.endswith("(no fair comparison)")
    assert fork_report.verdict(fork(True, error="low: exited with status 2")).endswith("low: exited with status 2")


def test_the_notes_say_there_was_no_continuation_and_which_override_changed_nothing():
    notes = fork_report.notes(fork(True))
    assert any(
        line.startswith("no continuation: the original run's files hold no update after step 3") for line in notes
    )
    assert "same is identical to the control: its override changed nothing the records show" in notes
    assert not any(line.startswith("no continuation") for line in fork_report.notes(fork(True, continuation=1)))


def test_the_report_prints_the_branches_and_the_verdict_last():
    out = Console(file=io.StringIO(), width=200)
    fork_report.print_fork(out, fork(True))
    text = out.file.getvalue()
    assert "fork of c.pt at step 3" in text and text.rstrip().splitlines()[-1].startswith("FAIR:")
    unfair = Console(file=io.StringIO(), width=200)
    fork_report.print_fork(unfair, fork(False))
    assert "NOT FAIR: x[1] differs." in unfair.file.getvalue()  # the reasons' brackets are text, not markup
