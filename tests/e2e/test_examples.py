"""Every framework example, run through the verifier as a user runs it, gives the verdict docs/audit.md states.

The audit (benchmarks/audit.py, docs/audit.json) verifies every row at k = 3, 6 and 9 with 12
steps; these tests run the documented path and the user-level fix of each example at k = 3
(mid-epoch) and 6 (the epoch boundary), and require the audit's verdict, first mismatch and
diagnosis at each, and the exit code they imply. A row the audit finds the same at every point (exact
everywhere, or failing everywhere in the same field with the same part lost) runs at k = 3 alone: each
framework process starts in seconds, and the boundary is tried where the audit found it differs. The
frameworks are in the `dev` extra: these tests never skip. The minimal loop of docs/kit.md
(examples/minimal_loop.py) passes the verifier too, and the page shows it word for word.
"""

import ast
import io
import json
import re
import tokenize

import pytest

from benchmarks import audit  # the rows and their verify commands
from tests.helpers import REPO, read_verification, run_verify

AUDITED = json.loads(audit.AUDIT_JSON.read_text())
BY_KEY = {entry["row"]["key"]: entry for entry in AUDITED["rows"]}
POINTS = ("3", "6")  # mid-epoch, and the boundary after the first epoch
TESTED = [row for row in audit.rows() if row.variant in audit.BRIEF]
EXAMPLES = [*sorted((REPO / "examples").glob("*_example.py")), REPO / "examples" / "plain_dataloader.py"]
MINIMAL = REPO / "examples" / "minimal_loop.py"  # docs/kit.md's loop: the kit alone, no framework


@pytest.mark.parametrize("row", TESTED, ids=[row.key for row in TESTED])
def test_the_example_gives_the_verdict_docs_audit_states(tmp_path, row):
    expected = BY_KEY[row.key]
    same_everywhere = len({(p["verdict"], audit.cell(p), p["lost"]) for p in expected["points"].values()}) == 1
    points = POINTS[:1] if same_everywhere else POINTS
    argv = audit.verify_command(row, tmp_path / "v", points=",".join(points))
    proc = run_verify(*argv[argv.index("--output") :], timeout=480)
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    document = read_verification(tmp_path / "v" / "verification.json")
    resumes = document["comparison"]["resumes"]
    assert len(resumes) == len(points)
    for k in points:
        found = audit._verdict(resumes[audit.point_name(int(k), int(points[0]))])
        assert found == expected["points"][k], (k, found)
    exact = all(expected["points"][k]["verdict"] == "concordant" for k in points)
    negative = document["comparison"]["no_rng_resume"]["verdict"] == "divergent"
    assert proc.returncode == (0 if exact and negative else 1), proc.stderr[-2000:]


def protocol_lines(source: str) -> int:
    """Lines that speak the protocol: every line marked `# protocol`, and every line of a simple statement whose
    first line is marked (a compound statement's body counts only where it is marked itself)."""
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    marked = {t.start[0] for t in tokens if t.type == tokenize.COMMENT and t.string.startswith("# protocol")}
    counted = set(marked)
    for node in ast.walk(ast.parse(source)):
        simple = isinstance(node, ast.stmt) and not hasattr(node, "body")
        if simple and node.lineno in marked and node.end_lineno is not None:
            counted.update(range(node.lineno, node.end_lineno + 1))
    return len(counted)


@pytest.mark.parametrize("example", EXAMPLES, ids=[path.stem for path in EXAMPLES])
def test_an_example_needs_at_most_15_protocol_lines(example):
    count = protocol_lines(example.read_text())
    assert 5 <= count <= 15, count


def test_the_protocol_line_count_includes_every_line_of_a_marked_statement():
    source = (
        '"""Lines marked `# protocol`."""\n'  # a docstring quoting the marker marks nothing
        "x = f(  # protocol\n    1,\n)\nif a:  # protocol\n    b = 1\n    c = 2  # protocol\n"
    )
    assert protocol_lines(source) == 5


def test_the_audit_covers_every_example_and_every_cause():
    scripts = {fw.script for fw in audit.FRAMEWORKS}
    assert scripts == {f"examples/{path.name}" for path in EXAMPLES}
    for code in {code for codes in audit.causes.FRAMEWORK_CAUSES.values() for code in codes}:
        alone = [entry for key, entry in BY_KEY.items() if key.endswith(f"/{code} alone")]
        assert alone and all(e["exit_code"] == 1 for e in alone), code  # each cause alone diverges
    for key, entry in BY_KEY.items():
        if key.endswith("/all causes removed") or key == "plain/careful":
            assert entry["exit_code"] == 0, key  # and the list of causes is complete


def test_docs_kit_page_shows_the_minimal_loop_word_for_word_and_it_is_under_60_lines():
    page = (REPO / "docs" / "kit.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", page, flags=re.DOTALL)
    assert MINIMAL.read_text() in blocks
    assert len(MINIMAL.read_text().splitlines()) < 60


def test_the_minimal_loop_passes_the_verifier(tmp_path):
    proc = run_verify("--output", tmp_path / "v", "--train-cmd", f"python -B {MINIMAL}")
    assert proc.returncode == 0, proc.stderr
