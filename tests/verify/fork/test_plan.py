"""What a fork is asked to do: each branch's overrides as typed, refused in one line where they cannot make a fair
comparison, and the process each branch runs."""

from pathlib import Path

import pytest

from resumeproof.verify.fork.plan import Branch, ForkSettings, parse_branch
from resumeproof.verify.settings import SettingsError


def settings(*branches: str, steps: int = 3, train_cmd: str = "python -B train.py") -> ForkSettings:
    parsed = tuple(parse_branch(b) for b in branches)
    checkpoint = Path("a/step_000004.pt")
    return ForkSettings(checkpoint=checkpoint, branches=parsed, steps=steps, output=Path("f"), train_cmd=train_cmd)


def test_overrides_are_split_like_a_shell():
    assert parse_branch("low=--pivot lr=0.01") == Branch(name="low", overrides=("--pivot", "lr=0.01"))
    assert parse_branch("wide=--note 'a b'").overrides == ("--note", "a b")


@pytest.mark.parametrize(
    ("branches", "says"),
    [
        (("low",), "expected NAME=OVERRIDES"),
        (("low=--pivot 'lr=1",), "No closing quotation"),
        (("low=--pivot lr=0.01",), "1 given: a fork compares two or more branches"),
        (("low=--pivot lr=0.01", "low=--pivot lr=0.1"), "'low' named twice"),
        (("low=--pivot lr=0.01", "high=--pivot lr=0.01"), "'high': the same overrides as 'low'"),
        (("control=--pivot lr=0.01", "high=--pivot lr=0.1"), "'control' is the fork's own branch"),
        (("a/b=--pivot lr=0.01", "high=--pivot lr=0.1"), "a name is letters, digits"),
        (("low=", "high=--pivot lr=0.1"), "no override; the control already runs without any"),
        (("low=--steps 9", "high=--pivot lr=0.1"), "--steps is the fork's to set"),
        (("low=--omit=model", "high=--pivot lr=0.1"), "--omit=model is the fork's to set"),
        (("low=--resume x.pt", "high=--pivot lr=0.1"), "--resume is the fork's to set"),
    ],
)
def test_a_branch_that_cannot_make_a_fair_comparison_is_refused_in_one_line(branches, says):
    with pytest.raises(SettingsError) as refused:
        settings(*branches)
    assert refused.value.flag == "--branch" and says in refused.value.message


def test_a_fork_runs_at_least_one_update_and_some_command():
    with pytest.raises(SettingsError, match="at least one update"):
        settings("a=--x 1", "b=--x 2", steps=0)
    with pytest.raises(SettingsError, match="is empty"):
        settings("a=--x 1", "b=--x 2", train_cmd=" ")


def test_each_branch_resumes_its_own_copy_with_its_overrides_last():
    s = settings("low=--pivot lr=0.01", "high=--pivot lr=0.1", steps=1)
    t = s.trajectory(s.branches[0])
    copy = Path("f/branches/low/fork-point/step_000004.pt")
    protocol = ["--steps", "1", "--output", "f/branches/low/run", "--resume", str(copy)]
    assert t.argv == ["python", "-B", "train.py", *protocol, "--pivot", "lr=0.01"]
    assert s.copy("low") == copy and t.log == Path("f/logs/low.log")
    assert t.observe is not None and t.observe.updates == frozenset({1})  # the second only where there is one
    control = s.trajectory(s.control)
    assert control.argv[-2:] == ["--resume", "f/branches/control/fork-point/step_000004.pt"]
