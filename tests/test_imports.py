"""No import cycles anywhere in the package: every import statement of every module, those under
`if TYPE_CHECKING:` and inside functions included, is an edge of one graph, and the graph has no cycle.

An import names a module of the package (`import resumeproof.verify.run.accept`, `from resumeproof.verify
import accept`) or a name a module defines (`from resumeproof.kit.checkpoint import save`): the edge goes to
that module, and a name a package `__init__` re-exports is an edge to the `__init__`, which imports its
own modules in turn. A cycle hidden under TYPE_CHECKING or in a late import is still a cycle: the two
modules cannot be understood, tested or moved one without the other.
"""

import ast
from pathlib import Path

from tests.helpers import REPO

Graph = dict[str, set[str]]


def module_names(root: Path) -> dict[str, Path]:
    """Every module under the package directory `root`, by dotted name (a package by its own name)."""
    names = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root.parent).with_suffix("").parts
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


def imports_of(path: Path, name: str, known: set[str]) -> set[str]:
    """The modules of `known` that the import statements of module `name` (at `path`) name, at any depth."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the package, one level up per dot beyond the first
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            found |= {f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names}
    return found & known - {name}


def graph(root: Path) -> Graph:
    names = module_names(root)
    return {name: imports_of(path, name, set(names)) for name, path in names.items()}


def cycle(edges: Graph) -> list[str] | None:
    """One cycle of `edges` as the path that closes it (a, b, a), or None when there is none."""
    done: set[str] = set()
    for start in sorted(edges):
        path, stack = [start], [iter(sorted(edges[start]))]
        while stack:
            target = next(stack[-1], None)
            if target is None:
                done.add(path.pop())
                stack.pop()
            elif target in path:
                return [*path[path.index(target) :], target]
            elif target not in done:
                path.append(target)
                stack.append(iter(sorted(edges.get(target, ()))))
    return None


def test_the_package_has_no_import_cycle():
    found = cycle(graph(REPO / "resumeproof"))
    assert found is None, " -> ".join(found or ())


def test_the_graph_holds_the_imports_it_must():
    """The reader sees every kind of import the package uses: a module, a name of a module, a re-export."""
    edges = graph(REPO / "resumeproof")
    assert "resumeproof.verify.judge.asked" in edges["resumeproof.verify.verification"]  # late, inside a function
    assert "resumeproof.common.protocol" in edges["resumeproof.cli.chaos"]  # `from ... import NAME`
    assert "resumeproof.kit.checkpoint" in edges["resumeproof.kit"]  # a package's re-export


def test_the_detector_finds_a_cycle_in_a_small_graph():
    """The negative control: a cycle three modules long, beside a branch without one."""
    edges = {"a": {"b", "d"}, "b": {"c"}, "c": {"a"}, "d": set()}
    assert cycle(edges) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b", "d"}, "b": {"c"}, "c": {"d"}, "d": set()}) is None


def test_an_import_under_type_checking_or_inside_a_function_closes_a_cycle(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from pkg.b import B\n")
    (package / "b.py").write_text("def f():\n    from . import a\n")
    assert cycle(graph(package)) == ["pkg.a", "pkg.b", "pkg.a"]
