"""The tests are laid out as the package is: tests/common/, tests/kit/ and tests/verify/ hold one test module per
module of resumeproof/common/, resumeproof/kit/ and resumeproof/verify/ (and their subpackages) that has tests of its
own; and the tests of the formats and of the kit never use the verifier, which their modules never import either.

A test that needs the verifier to judge a trainer runs it end to end and lives in tests/e2e/. The rule is read off
every import statement of every file under tests/common/ and tests/kit/, nested ones included: a module
(`import resumeproof.verify.judge.compare`), a name imported from one (`from resumeproof import cli`), or the helper
that runs the verifier in a fresh process (`tests.helpers.run_verify`).
"""

import ast
from pathlib import Path

import pytest

from tests.helpers import REPO

TESTS = REPO / "tests"
PACKAGE = REPO / "resumeproof"
MIRRORS = ("common", "kit", "verify")
VERIFIER = ("resumeproof.verify", "resumeproof.cli", "verify_resume", "tests.helpers.run_verify")
KIT_AND_FORMATS = sorted(p for folder in ("common", "kit") for p in (TESTS / folder).rglob("*.py"))
# Test modules named after no module of their folder's package, and why.
UNMIRRORED = {
    "common/test_weights_only_fuzz.py": "the seeded differential fuzz slice of common/weights_only/",
    "verify/test_cli.py": "the `resumeproof` command (resumeproof.cli), which sits above the verifier and drives it",
}


def names_imported(source: str) -> list[str]:
    """Every dotted name an import statement of `source` names, at any depth: the module, and for `from M import N`
    also `M.N` (N may be a module or a name defined in M)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found += [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
    return found


def verifier_imports(source: str) -> list[str]:
    return [n for n in names_imported(source) if any(n == v or n.startswith(f"{v}.") for v in VERIFIER)]


@pytest.mark.parametrize("path", KIT_AND_FORMATS, ids=lambda p: p.relative_to(TESTS).as_posix())
def test_the_tests_of_the_kit_and_the_formats_never_import_the_verifier(path: Path):
    assert verifier_imports(path.read_text()) == []


@pytest.mark.parametrize(
    ("source", "named"),
    [
        (
            "def f():\n    from resumeproof.verify.judge.compare import compare_keys\n",
            "resumeproof.verify.judge.compare",
        ),
        ("from resumeproof import cli\n", "resumeproof.cli"),
        ("import verify_resume\n", "verify_resume"),
        ("from tests.helpers import REPO, run_verify\n", "tests.helpers.run_verify"),
    ],
    ids=["late-verify-module", "cli-as-a-name", "the-script", "run-verify"],
)
def test_the_check_finds_an_import_of_the_verifier_in_any_form(source: str, named: str):
    """The negative control: each form is caught, and a neighbour of the same prefix is not."""
    assert named in verifier_imports(source)
    assert verifier_imports("from resumeproof.common import protocol\nimport verify_resume_notes\n") == []


def mirrored(test: Path) -> bool:
    """A module test_X.py of a folder of tests/ stands for the module X.py, or the package X/, of the same folder of
    resumeproof/."""
    module = PACKAGE / test.relative_to(TESTS).parent / test.stem.removeprefix("test_")
    return module.with_suffix(".py").is_file() or (module / "__init__.py").is_file()


def test_every_test_module_of_common_kit_and_verify_is_named_after_a_module_of_the_package():
    tests = sorted(p for folder in MIRRORS for p in (TESTS / folder).rglob("test_*.py"))
    strays = [p.relative_to(TESTS).as_posix() for p in tests if not mirrored(p)]
    assert strays == sorted(UNMIRRORED)
    assert mirrored(TESTS / "kit" / "adapters" / "test_common.py")  # a subpackage's module
    assert not mirrored(TESTS / "kit" / "test_devices.py")  # what the tests once held under another name
