"""docs/ci.md: its workflow and job are valid YAML, and every resumeproof command in them parses."""

import re
import shlex

import click
import pytest
import yaml

from resumeproof.cli import main
from tests.helpers import REPO

PAGE = (REPO / "docs" / "ci.md").read_text()
BLOCKS = [yaml.safe_load(block) for block in re.findall(r"```yaml\n(.*?)```", PAGE, flags=re.DOTALL)]


def commands(block: dict) -> list[str]:
    """Every shell line a GitHub workflow's run steps or a GitLab job's script would run."""
    lines = []
    for job in block.get("jobs", {}).values():
        for step in job["steps"]:
            lines += step.get("run", "").replace("\\\n", " ").splitlines()
    for name, job in block.items():
        if name != "jobs" and isinstance(job, dict) and "script" in job:
            lines += job["script"]
    return [line.strip() for line in lines if line.strip()]


def test_the_page_has_a_github_workflow_and_a_gitlab_job():
    github, gitlab = BLOCKS
    assert set(github["jobs"]["resume-proof"]) >= {"runs-on", "steps"} and github[True] == ["push", "pull_request"]
    assert {"script", "artifacts", "retry"} <= set(gitlab["resume-proof"])
    assert gitlab["resume-proof"]["artifacts"]["reports"]["junit"] == "runs/resumeproof.xml"
    assert gitlab["resume-proof"]["retry"]["exit_codes"] == [2]  # could not complete, never a failed comparison


@pytest.mark.parametrize("block", BLOCKS, ids=["github", "gitlab"])
def test_every_resumeproof_command_in_the_page_is_one_the_cli_accepts(block):
    found = [line for line in commands(block) if line.startswith("resumeproof ")]
    assert found, "no resumeproof command"
    for line in found:
        name, *args = shlex.split(line)[1:]
        assert name in main.commands, line
        main.commands[name].make_context(name, args)  # raises on an unknown option or a bad value


@pytest.mark.parametrize("block", BLOCKS, ids=["github", "gitlab"])
def test_every_install_goes_through_the_constraints(block):
    installs = [line for line in commands(block) if "pip install" in line]
    assert installs and all("-c constraints.txt" in line for line in installs)


def test_a_typo_in_an_option_would_be_caught():
    with pytest.raises(click.NoSuchOption):
        main.commands["verify"].make_context("verify", ["--output", "x", "--junit-xlm", "y"])
