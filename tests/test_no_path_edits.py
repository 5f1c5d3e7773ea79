"""No module of the repository assigns to or mutates sys.path: not in its code, nor in a string of code it
writes for a fresh interpreter to run.

Nothing needs to: the benchmarks run as modules from the repository's root (`python -B -m benchmarks.gpu`),
tests/trainers/_protocol_files.py loads the writer it needs by its file, and pytest puts the repository on the
path of the tests. An edit hides where a module really comes from, and leaks into whatever runs after it.
"""

import ast
import re
import textwrap
from pathlib import Path

import pytest

from tests.helpers import REPO

SKIPPED = {".venv", "runs", "build", ".git"}  # not the repository's own modules
MUTATORS = {"insert", "append", "extend", "remove", "pop", "clear", "reverse", "sort"}
MUTATORS |= {"__setitem__", "__delitem__", "__iadd__"}
PLACEHOLDER = re.compile(r"\{[^{}]*\}")  # str.format's fields, in a template of code
DEPTH = 3  # strings of code inside strings of code


def modules() -> list[Path]:
    return sorted(p for p in REPO.rglob("*.py") if not SKIPPED & set(p.relative_to(REPO).parts))


def edits(source: str, depth: int = 0) -> list[int]:
    """The lines of `source` where sys.path is assigned to or mutated, strings that parse as code included."""
    tree = ast.parse(source)
    sys_names, path_names = {"sys"}, set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            sys_names |= {a.asname for a in node.names if a.name == "sys" and a.asname}
        elif isinstance(node, ast.ImportFrom) and node.module == "sys" and not node.level:
            path_names |= {a.asname or a.name for a in node.names if a.name == "path"}

    def is_path(node: ast.AST) -> bool:
        if isinstance(node, ast.Attribute):
            return node.attr == "path" and isinstance(node.value, ast.Name) and node.value.id in sys_names
        return isinstance(node, ast.Name) and node.id in path_names

    found = []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in MUTATORS and is_path(node.func.value):
                found.append(line)  # sys.path.insert(0, ...)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr":
            if node.args and isinstance(node.args[0], ast.Name) and node.args[0].id in sys_names:
                found.append(line)  # setattr(sys, "path", ...)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store | ast.Del) and is_path(node):
            found.append(line)  # sys.path = ..., sys.path += ...
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store | ast.Del) and is_path(node.value):
            found.append(line)  # sys.path[0] = ..., sys.path[:0] = ..., del sys.path[0]
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and node.target.id in path_names:
            found.append(line)  # from sys import path; path += [...]
        elif depth < DEPTH and (code := _code(node)) is not None and edits(code, depth + 1):
            found.append(line)  # a string of code that does one of the above
    return found


def _code(node: ast.AST) -> str | None:
    """The text of a string (an f-string's fields as `_`) if it parses as code, as written or as a template."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        text = node.value
    elif isinstance(node, ast.JoinedStr):
        text = "".join(v.value if isinstance(v, ast.Constant) else "_" for v in node.values)
    else:
        return None
    text = textwrap.dedent(text)
    for candidate in (text, PLACEHOLDER.sub("_", text)):
        try:
            ast.parse(candidate)
        except (SyntaxError, ValueError, RecursionError):
            continue
        return candidate
    return None


def test_no_module_edits_sys_path():
    found = {}
    for path in modules():
        if lines := edits(path.read_text()):
            found[path.relative_to(REPO).as_posix()] = lines
    assert found == {}


# The forms are spelled with {SYS} for the module's name, so that this file does not hold the edits it looks for.
SYS = "sys"
FORMS = {
    "insert": f"import {SYS}\n{SYS}.path.insert(0, 'here')\n",
    "append": f"import {SYS}\n{SYS}.path.append('here')\n",
    "extend": f"import {SYS}\n{SYS}.path.extend(['here'])\n",
    "remove": f"import {SYS}\n{SYS}.path.remove('here')\n",
    "item": f"import {SYS}\n{SYS}.path[0] = 'here'\n",
    "slice": f"import {SYS}\n{SYS}.path[:0] = ['here']\n",
    "del": f"import {SYS}\ndel {SYS}.path[0]\n",
    "assign": f"import {SYS}\n{SYS}.path = ['here']\n",
    "augmented": f"import {SYS}\n{SYS}.path += ['here']\n",
    "alias": f"import {SYS} as s\ns.path.insert(0, 'here')\n",
    "from-import": f"from {SYS} import path\npath.insert(0, 'here')\n",
    "setattr": f"import {SYS}\nsetattr({SYS}, 'path', ['here'])\n",
    "in-a-function": f"def main():\n    import {SYS}\n    {SYS}.path.append('here')\n",
    "in-a-string-of-code": f"SCRIPT = '''\nimport {SYS}\n{SYS}.path.insert(0, str(here))\n'''\n",
    "in-an-f-string": f"SCRIPT = f'import {SYS}; {SYS}.path.insert(0, {{here!r}})'\n",
    "in-a-template": f"SCRIPT = 'import {SYS}; {SYS}.path.insert(0, {{!r}})'.format(here)\n",
    "in-a-dedented-string": f"SCRIPT = '''\n    import {SYS}\n    {SYS}.path.append(here)\n'''\n",
}


@pytest.mark.parametrize("source", FORMS.values(), ids=FORMS.keys())
def test_the_check_catches_every_form_of_edit(source):
    assert edits(source) != [], source


def test_the_check_lets_reading_sys_path_and_prose_about_it_pass():
    reads = f"import {SYS}\nfirst = {SYS}.path[0]\nfound = 'here' in {SYS}.path\npath = list({SYS}.path)\n"
    prose = f'"""No {SYS}.path edits: run it as a module (python -m benchmarks.gpu)."""\n'
    copy = f"import {SYS}\npaths = list({SYS}.path)\npaths.insert(0, 'here')\n"
    assert edits(reads) == edits(prose) == edits(copy) == []
