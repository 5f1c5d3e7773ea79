"""docs/audit.md and the README show the table benchmarks/audit.py wrote (docs/audit.json), and name every cause."""

import json
import re

from benchmarks import audit  # the table's rendering
from tests.helpers import REPO

AUDITED = json.loads(audit.AUDIT_JSON.read_text())


def block(path, name="table"):
    text = path.read_text()
    return re.search(rf"<!-- audit:{name} -->\n(.*?)<!-- /audit:{name} -->", text, re.S).group(1)


def test_docs_audit_shows_the_table_of_docs_audit_json():
    assert block(REPO / "docs" / "audit.md") == audit.table(AUDITED)


def test_the_readme_shows_its_brief_form_and_stays_short():
    assert block(REPO / "README.md") == audit.table(AUDITED, brief=True)
    section = (REPO / "README.md").read_text().split("## Frameworks", 1)[1].split("\n## ", 1)[0]
    assert len(section.strip().splitlines()) <= 16


def test_every_row_of_the_audit_is_in_the_json_with_the_versions_pinned():
    assert [entry["row"]["key"] for entry in AUDITED["rows"]] == [row.key for row in audit.rows()]
    pins = dict(line.split("==") for line in (REPO / "constraints.txt").read_text().splitlines() if "==" in line)
    for framework, version in AUDITED["versions"].items():
        package = next(fw.package for fw in audit.FRAMEWORKS if fw.name == framework)
        assert pins[package] == version.split("+")[0], framework


def test_no_divergence_without_a_confirmed_cause_named_in_docs_audit():
    page = (REPO / "docs" / "audit.md").read_text()
    for entry in AUDITED["rows"]:
        framework = entry["row"]["framework"]
        divergent = any(p["verdict"] == "divergent" for p in entry["points"].values())
        codes = audit.causes.FRAMEWORK_CAUSES[framework]
        assert not divergent or codes, entry["row"]["key"]
        for code in codes:
            cause = audit.causes.CAUSES[code]
            assert f"| {code} |" in page and cause.where.split(" (")[0].split(": ")[1] in page, code
