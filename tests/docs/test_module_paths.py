"""Every module path the words name exists: in the docs, in docstrings and comments, in every string of the code.

A path is a file of this repository (`verify/plan/trainer.py`, `tests/kit/test_run.py`, `docs/checks.md`; one under the
package may be named from inside it, `kit/layout.py`) or a dotted module (`resumeproof.kit.layout`, with at most
one name defined in it after: `resumeproof.kit.layout.capture`). CHANGELOG.md is history and may name what is gone.
"""

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

from tests.helpers import REPO

PACKAGE = REPO / "resumeproof"
ROOTS = ("resumeproof", "tests", "benchmarks", "examples", "docs", "data", ".ci")
INSIDE = tuple(p.name for p in PACKAGE.iterdir() if p.is_dir() and not p.name.startswith("_"))  # verify, kit, ...
FILE = re.compile(r"(?<![\w./-])((?:[\w.-]+/)+[\w.-]+\.(?:py|md|csv|xsd|toml))\b")
TOP = "|".join(p.stem for p in PACKAGE.iterdir() if not p.name.startswith("_") and p.suffix in ("", ".py"))
DOTTED = re.compile(rf"(?<![\w.])(resumeproof\.(?:{TOP})\b(?:\.\w+)*)")  # not resumeproof.json, a file's name
WORDS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
SOURCES = ("resumeproof", "tests", "benchmarks", "examples", "data")
CODE = [*sorted(p for root in SOURCES for p in (REPO / root).rglob("*.py")), *REPO.glob("*.py")]


def texts(path: Path) -> list[str]:
    """A document whole; of a module, its comments and strings (docstrings, messages, help), not its code."""
    if path.suffix == ".md":
        return [path.read_text()]
    tokens = tokenize.generate_tokens(io.StringIO(path.read_text()).readline)
    return [t.string for t in tokens if t.type in (tokenize.COMMENT, tokenize.STRING)]


def file_exists(named: str, where: Path) -> bool:
    """Relative to the repository, to the package (from inside it), or to the naming file's folder."""
    candidates = [REPO / named, PACKAGE / named, where.parent / named]
    return any(c.exists() for c in candidates) or not named.startswith((*ROOTS, *INSIDE))


def dotted_exists(named: str) -> bool:
    parts = named.split(".")
    for cut in range(len(parts), 0, -1):
        base = REPO.joinpath(*parts[:cut])
        module = base.with_suffix(".py") if base.with_suffix(".py").is_file() else base / "__init__.py"
        if module.is_file():
            rest = parts[cut:]
            return not rest or (len(rest) <= 2 and _defines(module, rest[0]))
    return False


def _defines(module: Path, name: str) -> bool:
    """The module defines or imports `name` at its top level (a function, a class, a constant, a submodule)."""
    if (module.parent / name).is_dir() or (module.parent / f"{name}.py").is_file():
        return module.name == "__init__.py"
    tree = ast.parse(module.read_text())
    for node in tree.body:
        targets: list[str] = []
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            targets = [node.name]
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            nodes = node.targets if isinstance(node, ast.Assign) else [node.target]
            targets = [n.id for t in nodes for n in ast.walk(t) if isinstance(n, ast.Name)]
        elif isinstance(node, ast.Import | ast.ImportFrom):
            targets = [(a.asname or a.name).split(".")[0] for a in node.names]
        if name in targets:
            return True
    return False


def missing(path: Path) -> list[str]:
    found = []
    for text in texts(path):
        found += [f"{name} (file)" for name in FILE.findall(text) if not file_exists(name, path)]
        found += [f"{name} (module)" for name in DOTTED.findall(text) if not dotted_exists(name)]
    return found


OWN = Path(__file__).resolve()  # its negative control names stale paths on purpose


@pytest.mark.parametrize("path", [p for p in WORDS + CODE if p != OWN], ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_module_path_named_exists(path):
    assert missing(path) == []


def test_the_check_finds_a_stale_path_and_a_stale_module(tmp_path):
    stale = tmp_path / "stale.py"
    stale.write_text('"""See verify/determinism.py and resumeproof.verify.probes."""\n# kit/distributed/dcp.py\n')
    said = ["verify/determinism.py (file)", "resumeproof.verify.probes (module)", "kit/distributed/dcp.py (file)"]
    assert missing(stale) == said
    fine = tmp_path / "fine.py"
    fine.write_text('"""See verify/plan/trainer.py, resumeproof.kit.layout.capture and tests/helpers.py."""\n')
    assert missing(fine) == []
