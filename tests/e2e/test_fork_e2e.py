"""End to end, `resumeproof fork`: branches of the reference trainer (its `--pivot`) and of a trainer whose overrides
are plain flags of its own (tests/trainers/config_flags.py), each a fresh process; a fair fork, an unfair one, an
override the trainer refuses, and bad inputs refused in one line before anything runs."""

import hashlib
import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from resumeproof.cli import main
from resumeproof.common.protocol import CheckKind
from tests.helpers import REPO, TRAINERS, identical, run_script, run_train, summary

# The tests that read one fork on one worker, so that it is made once; the two forks and the rest spread over both.
REFERENCE, PLAIN_FORK = pytest.mark.xdist_group("fork-reference"), pytest.mark.xdist_group("fork-plain")
PLAIN = TRAINERS / "config_flags.py"


def fork(*args: object) -> tuple[subprocess.CompletedProcess, dict]:
    argv = [sys.executable, "-B", "-m", "resumeproof", "fork", *map(str, args), "--jobs", "2"]
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=REPO, timeout=300)
    out = Path(str(args[args.index("--output") + 1]))
    return proc, json.loads((out / "fork.json").read_text()) if (out / "fork.json").is_file() else {}


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """A reference run of 6 updates with a generation at 3, forked there for 3 updates: to lr 0.01, and to lr 0.03,
    the lr the run already has (no pivot at all)."""
    root = tmp_path_factory.mktemp("fork")
    proc = run_train("--steps", "6", "--output", root / "run", "--checkpoint-every", "3")
    assert proc.returncode == 0, proc.stderr
    source = root / "run" / "step_000003.pt"
    before = sha256(source)
    branches = ("--branch", "low=--pivot lr=0.01", "--branch", "same=--pivot lr=0.03")
    proc, doc = fork(source, *branches, "--steps", "3", "--output", root / "fork")
    return proc, doc, root, before


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    """A run of 4 updates of the plain-flags trainer, forked at its end for 2: `--lr 0.2`, and `--seed 1`, which
    reseeds the dropout generator after the restore."""
    root = tmp_path_factory.mktemp("fork-plain")
    proc = run_script(PLAIN, "--steps", "4", "--output", root / "run")
    assert proc.returncode == 0, proc.stderr
    command = ("--train-cmd", shlex.join([sys.executable, "-B", str(PLAIN)]), "--no-plot")
    branches = ("--branch", "fast=--lr 0.2", "--branch", "reseeded=--seed 1")
    proc, doc = fork(root / "run" / "checkpoint.pt", *command, *branches, "--steps", "2", "--output", root / "fork")
    return proc, doc, root


@REFERENCE
def test_a_fork_of_the_reference_trainer_is_fair_and_says_who_ended_lower_and_where_the_branches_part(reference):
    proc, doc, _, _ = reference
    assert proc.returncode == 0, proc.stderr
    assert doc["fair"] and doc["reasons"] == [] and doc["fork_step"] == 3
    assert doc["original"] == {"records_from": ["summary.json"], "continuation": 3}  # the run went on to step 6
    kinds = sorted(c["kind"] for c in doc["checks"])
    assert kinds == ["continuation", "continues", "continues", "continues", "inputs", "inputs"]
    assert "control-repeat" not in doc["processes"]  # the original run already shows the control deterministic
    low, same = doc["branches"]["low"], doc["branches"]["same"]
    assert low["parts_at"] == 4 and "pivot" in low["parted_by"] and "history[3].lr" in low["parted_by"]
    assert "same optimizer state" in low["first_difference"]  # what the pivot changed comes after the inputs
    assert (same["parts_at"], same["parted_by"]) == (None, None)  # restating the lr changes nothing
    assert "same is identical to the control: its override changed nothing" in proc.stderr
    lowest = min(doc["branches"], key=lambda name: doc["branches"][name]["final_loss"])
    assert doc["lowest"] == lowest and f"{lowest} ended lowest" in doc["outcome"] and "FAIR:" in proc.stderr


@REFERENCE
def test_each_branch_continues_the_original_history_and_the_control_reproduces_the_original_run(reference):
    _, doc, root, _ = reference
    original = summary(root / "run")
    assert [(p["step"], p["loss"], p["lr"]) for p in doc["before"]] == [
        (r["step"], r["loss"], r["lr"]) for r in original["history"][:3]
    ]
    for name in ("control", "low", "same"):
        ran = summary(root / "fork" / "branches" / name / "run")
        assert ran["step"] == 6 and ran["history"][:3] == original["history"][:3], name
    assert identical(summary(root / "fork" / "branches" / "control" / "run"), original)


@REFERENCE
def test_the_checkpoint_is_only_read_and_each_branch_resumes_its_own_copy(reference):
    _, doc, root, before = reference
    assert sha256(root / "run" / "step_000003.pt") == before == doc["checkpoint_sha256"]
    for name in ("control", "low", "same"):
        copy = root / "fork" / "branches" / name / "fork-point" / "step_000003.pt"
        assert sha256(copy) == before, name
        assert summary(copy.parent.parent / "run")["meta"]["resumed_from"] == str(copy)


@REFERENCE
def test_the_plot_draws_the_branches_from_the_fork_point(reference):
    _, doc, root, _ = reference
    picture = root / "fork" / "fork.png"
    assert doc["plot"] == str(picture) and picture.read_bytes().startswith(b"\x89PNG")


@PLAIN_FORK
def test_a_plain_flags_fork_is_not_fair_where_an_override_reseeds_a_generator(plain):
    proc, doc, _ = plain
    assert proc.returncode == 1, proc.stderr
    assert not doc["fair"] and len(doc["reasons"]) == 1
    assert doc["reasons"][0].startswith("reseeded's first update does not start from the control's state: ")
    assert "torch generator" in doc["reasons"][0]
    inputs = {c["trajectory"]: c for c in doc["checks"] if c["kind"] == CheckKind.INPUTS}
    assert inputs["fast"]["passed"] and inputs["reseeded"]["diagnosis"]["parts"] == ["rng-torch"]
    assert doc["branches"]["fast"]["parts_at"] == 5 and "lr 0.2 vs 0.05" in doc["branches"]["fast"]["first_difference"]
    assert "NOT FAIR:" in proc.stderr and "(no fair comparison)" in proc.stderr
    assert not (Path(doc["checkpoint"]).parent.parent / "fork" / "fork.png").exists()  # --no-plot


@PLAIN_FORK
def test_without_a_continuation_the_controls_repeat_proves_it_deterministic(plain):
    proc, doc, _ = plain
    assert doc["original"] == {"records_from": ["summary.json"], "continuation": 0}  # the run ended at the fork point
    assert "no continuation: the original run's files hold no update after step 4" in proc.stderr
    [repeat] = [c for c in doc["checks"] if c["kind"] == CheckKind.DETERMINISM]
    assert repeat["passed"] and doc["processes"]["control-repeat"]["exit_code"] == 0


@REFERENCE
def test_an_override_the_trainer_refuses_is_reported_in_its_own_words(reference, tmp_path):
    source = reference[2] / "run" / "step_000003.pt"
    branches = ("--branch", "low=--pivot lr=0.01", "--branch", "odd=--pivot momentum=0.5")
    proc, doc = fork(source, *branches, "--steps", "1", "--output", tmp_path / "f", "--no-plot")
    assert proc.returncode == 2, proc.stderr
    said = "odd: exited with status 2: train.py: error: --pivot 'momentum=0.5': only lr can change on resume"
    assert doc["error"].startswith(said) and said in proc.stderr and "Traceback" not in proc.stderr
    assert doc["processes"]["low"]["exit_code"] == 0  # the other branches ran, and are kept


def cli(*args: object) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["fork", *map(str, args)], prog_name="resumeproof")
    return result.exit_code, result.stderr


BRANCHES = ("--branch", "low=--pivot lr=0.01", "--branch", "high=--pivot lr=0.1", "--steps", "2")


def test_a_missing_checkpoint_is_one_line_and_creates_nothing(tmp_path):
    code, said = cli(tmp_path / "gone.pt", *BRANCHES, "--output", tmp_path / "f")
    assert code == 2 and said == f"resumeproof fork: error: CHECKPOINT {tmp_path / 'gone.pt'}: missing\n"
    assert not (tmp_path / "f").exists()
    debug = CliRunner().invoke(main, ["fork", str(tmp_path / "gone.pt"), *BRANCHES, "--output", "f", "--debug"])
    assert debug.exit_code != 0 and "missing" in str(debug.exception)  # --debug: the exception itself, raised


def test_a_branch_named_twice_is_refused_before_anything_runs(tmp_path):
    code, said = cli(tmp_path / "c.pt", *BRANCHES, "--branch", "low=--pivot lr=0.2", "--output", tmp_path / "f")
    assert code == 2 and "'low' named twice" in said and not (tmp_path / "f").exists()


@REFERENCE
def test_an_output_that_holds_something_else_is_left_untouched(reference, tmp_path):
    (tmp_path / "mine.txt").write_text("mine")
    code, said = cli(reference[2] / "run" / "step_000003.pt", *BRANCHES, "--output", tmp_path)
    assert code == 2 and said.strip().endswith(f"--output {tmp_path}: already holds mine.txt; refusing to touch it")
    assert [p.name for p in tmp_path.iterdir()] == ["mine.txt"]


def test_the_plot_without_matplotlib_says_how_to_install_it(monkeypatch, tmp_path):
    monkeypatch.setattr("resumeproof.verify.report.plot.available", lambda: False)
    code, said = cli(tmp_path / "c.pt", *BRANCHES, "--output", tmp_path / "f")
    assert code == 2 and '-e ".[plot]"' in said and "--no-plot" in said and not (tmp_path / "f").exists()
