"""The installed `resumeproof` command and its thin entry points: help, one error path, --debug."""

import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from resumeproof.cli.common import Command, debug_option
from resumeproof.common.errors import ResumeproofError
from tests.helpers import REPO

COMMAND = Path(sys.executable).with_name("resumeproof")  # what the README install puts beside the interpreter


def resumeproof(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(COMMAND), *map(str, args)], cwd=REPO, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        ((), "verify"),
        (("verify",), "--train-cmd"),
        (("chaos",), "--kills"),
        (("fork",), "--branch NAME=OVERRIDES"),
        (("flat",), "export"),
        (("flat", "export"), "CHECKPOINT OUT"),
        (("flat", "inspect"), "PATH"),
        (("export",), "RUN DEST"),
    ],
)
def test_every_command_has_help(args, says):
    proc = resumeproof(*args, "--help")
    assert proc.returncode == 0, proc.stderr
    assert says in proc.stdout


def test_the_script_and_the_command_are_the_same_verifier():
    script = subprocess.run(
        [sys.executable, "-B", "verify_resume.py", "--help"], cwd=REPO, capture_output=True, text=True
    )
    command = resumeproof("verify", "--help")
    assert script.stdout.replace("verify_resume.py", "resumeproof verify") == command.stdout


def test_an_existing_output_is_one_line_and_exit_2_and_debug_shows_the_traceback(tmp_path):
    proc = resumeproof("verify", "--output", tmp_path)
    assert proc.returncode == 2
    assert (
        proc.stderr.strip() == f"resumeproof verify: error: --output {tmp_path}: already exists; refusing to touch it"
    )
    debug = resumeproof("verify", "--output", tmp_path, "--debug")
    assert debug.returncode != 0 and "Traceback" in debug.stderr


def test_a_bad_option_value_names_the_option(tmp_path):
    proc = resumeproof("verify", "--output", tmp_path / "v", "--interrupt-at", "0")
    assert proc.returncode == 2 and "--interrupt-at" in proc.stderr and not (tmp_path / "v").exists()


def test_python_dash_m_resumeproof_is_the_command():
    proc = subprocess.run([sys.executable, "-m", "resumeproof", "--help"], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stdout == resumeproof("--help").stdout.replace(
        "resumeproof", "python -m resumeproof"
    )


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--checkpoint", "{run}/c"), "--resume-cmd"),
        (("--resume-cmd", "t {run} {steps} {checkpoint}"), "--checkpoint"),
        (("--resume-cmd", "t {run} {steps} {checkpoint}", "--checkpoint", "{run}/c", "--atol", "-1"), "-1.0 must"),
        (("--resume-cmd", "t {run} {steps} {checkpoint}", "--checkpoint", "{run}/c", "--segments", "2"), "--segments"),
        (("--resume-cmd", "t {run} {steps} {checkpoint}", "--checkpoint", "{run}/c", "--faults", "data"), "'data'"),
        (("--resume-cmd", "t {run} {steps}", "--checkpoint", "{run}/c"), "lacks {checkpoint}"),
    ],
)
def test_observe_refuses_what_cannot_work_in_one_line_before_running_anything(tmp_path, args, says):
    out = tmp_path / "v"
    proc = resumeproof("verify", "--observe", "--output", out, "--train-cmd", "t {run} {steps}", *args)
    assert proc.returncode == 2 and says in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert not out.exists()


def outcome(how: str) -> click.Command:
    """A command on the CLI's one error path whose callback ends `how`: a code, a kit error, a bug."""

    @click.command(name="cmd", cls=Command)
    @debug_option
    def cmd(debug: bool) -> int:
        if how == "error":
            raise ResumeproofError("no such run\n  at all")
        if how == "bug":
            raise ValueError("a bug")
        return int(how)

    return cmd


@pytest.mark.parametrize("code", [0, 1, 2])
def test_a_commands_returned_code_is_its_exit_code(code):
    assert CliRunner().invoke(outcome(str(code)), []).exit_code == code


def test_a_raised_error_ends_the_command_in_one_line_and_exit_2_and_debug_raises_it():
    result = CliRunner().invoke(outcome("error"), [], prog_name="resumeproof cmd")
    assert result.exit_code == 2 and result.stderr == "resumeproof cmd: error: no such run at all\n"
    shown = CliRunner().invoke(outcome("error"), ["--debug"])
    assert isinstance(shown.exception, ResumeproofError)
    bug = CliRunner().invoke(outcome("bug"), [])
    assert isinstance(bug.exception, ValueError) and "error:" not in bug.stderr  # a bug is no user error


def test_no_helper_of_the_cli_exits_for_its_caller():
    """Commands return their code and raise what they cannot complete; Command alone ends the process."""
    sources = {path.name: path.read_text() for path in (REPO / "resumeproof" / "cli").glob("*.py")}
    assert sources and not [name for name, text in sources.items() if "sys.exit(" in text or "exit_on_error" in text]


def test_check_debug_shows_the_traceback_of_a_bug_in_the_weights_only_check(tmp_path, monkeypatch):
    import torch

    from resumeproof.cli import main
    from resumeproof.common.weights_only import unpickler

    path = tmp_path / "checkpoint.pt"
    torch.save({"w": torch.ones(2)}, path)
    monkeypatch.setattr(unpickler, "load", lambda *args: None.attribute)
    quiet = CliRunner().invoke(main, ["check", str(path)])
    shown = CliRunner().invoke(main, ["check", str(path), "--debug"])
    said = f"{path}: internal error in the weights_only check (AttributeError); refused"
    assert quiet.exit_code == shown.exit_code == 1 and quiet.stderr == f"{path}: refused: {said}\n"
    assert shown.stderr.endswith(f"{said}\n") and "Traceback" in shown.stderr and "AttributeError:" in shown.stderr
