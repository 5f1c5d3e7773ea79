"""The documents: README and CI agree, the sample is valid, the manual states no history."""

import json
from pathlib import Path

from tests.helpers import REPO, read_verification


def test_readme_quotes_the_commands_that_ci_runs():
    readme, ci = (REPO / "README.md").read_text(), (REPO / ".ci" / "run").read_text()
    for command in ('python -m pip install -c constraints.txt -e ".[dev]"', "python -B -m pytest"):
        assert command in readme and command in ci, command


def test_docs_sample_verification_is_valid_against_the_schema():
    page = (REPO / "docs" / "verification-json.md").read_text()
    sample = json.loads(page.split("```json\n", 1)[1].split("```", 1)[0])
    sample["trajectories"] = {k: v for k, v in sample["trajectories"].items() if k != "..."}  # the elision
    path = REPO / "runs" / ".sample-verification.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(sample))
    try:
        read_verification(path)
    finally:
        path.unlink()


def test_readme_is_a_manual_under_200_lines_linking_every_docs_page():
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) < 200
    for page in sorted((REPO / "docs").glob("*.md")):
        assert f"docs/{page.name}" in readme, page.name


def test_docs_state_no_history():
    """How the code got here belongs in commit messages and CHANGELOG.md, not in the manual."""
    for page in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        text = page.read_text().lower()
        for phrase in ("before the fix", "an earlier version", "a first attempt", "used to "):
            assert phrase not in text, f"{page.name}: {phrase!r}"


def test_protocol_document_is_linked_from_the_readme():
    assert "docs/protocol.md" in (REPO / "README.md").read_text()
    assert Path(REPO / "docs" / "protocol.md").is_file()
