"""The repository's protocol document is the shared contract, word for word."""

from pathlib import Path

import pytest

from conftest import REPO

SHARED = REPO.parent / "shared" / "PROTOCOL.md"


@pytest.mark.skipif(not SHARED.is_file(), reason="the shared contract is not checked out beside the repository")
def test_docs_protocol_starts_with_the_shared_contract_verbatim():
    assert (REPO / "docs" / "protocol.md").read_text().startswith(SHARED.read_text())


def test_readme_quotes_the_commands_that_ci_runs():
    readme, ci = (REPO / "README.md").read_text(), (REPO / ".ci" / "run").read_text()
    for command in ('python -m pip install -c constraints.txt -e ".[dev]"', "python -B -m pytest"):
        assert command in readme and command in ci, command


def test_readme_sample_verification_matches_the_report_keys():
    readme = (REPO / "README.md").read_text()
    for key in ("all_checks_passed", "negative_divergence_detected", "max_state_deviation", "next_lr"):
        assert f'"{key}"' in readme, key


def test_protocol_document_is_linked_from_the_readme():
    assert "docs/protocol.md" in (REPO / "README.md").read_text()
    assert Path(REPO / "docs" / "protocol.md").is_file()
