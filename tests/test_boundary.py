"""Three layers, held: the torch-free formats below, the verifier and the kit on them, the command on top.

- `resumeproof.common` imports nothing of the package above it, and never torch;
- `resumeproof.verify` imports `common`, never the kit, and torch only in `verify/run/torch_load.py` (the
  opt-in `--torch-load`), inside a function;
- `resumeproof.kit` imports `common`, never the verifier;
- `resumeproof.reference`, the bundled trainer, is built on the kit alone, like any user's;
- the frameworks (Accelerate, Lightning, transformers) are imported only by the scripts that use them;
- inside `resumeproof.verify`, its stages stand on floors (STAGES): a stage imports its own modules and the floors
  below it, never one above or beside it; the words every stage shares are its ground floor, `vocabulary`; and so
  inside verify/judge/ (JUDGE): the observer's records are judged without the summaries' rules.
The rules are read off every import statement of every module, nested ones included. Then the
verifier runs in a fresh interpreter where `import torch` fails (`sys.modules["torch"] = None`):
a whole verification, chaos and `flat inspect`; the trainers it starts import torch as usual.
"""

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO

PACKAGE = REPO / "resumeproof"
VERIFIER_SIDE = sorted(p for layer in ("verify", "common", "cli") for p in (PACKAGE / layer).rglob("*.py"))
TORCH_LOAD = PACKAGE / "verify" / "run" / "torch_load.py"  # the verifier's one opt-in path to torch
# layer -> the prefixes its modules may never import, at any depth of the module
FORBIDDEN = {
    "common": ("torch", "resumeproof.verify", "resumeproof.kit", "resumeproof.cli", "resumeproof.reference"),
    "verify": ("torch", "resumeproof.kit", "resumeproof.cli", "resumeproof.reference"),
    "kit": ("resumeproof.verify", "resumeproof.cli", "resumeproof.reference"),
    "reference": ("resumeproof.verify", "resumeproof.cli"),  # the bundled trainer: the kit alone, like any user's
    # the observer runs inside any trainer, whose environment may lack resumeproof: it is loaded by its paths
    # (observe/site/sitecustomize.py) and imports torch and the standard library alone (xxhash and triton optionally)
    "observe": ("resumeproof",),
}
MODULES = sorted(p for layer in FORBIDDEN for p in (PACKAGE / layer).rglob("*.py"))
# verify/'s stages from the ground up; the stages of one floor do not import each other
STAGES = (
    ("vocabulary",),  # what a trajectory must show, the checks and findings, the measured spread
    ("run",),  # processes started and accepted (launch/ inside)
    ("settings",),  # what one verification is asked to do
    ("plan",),  # the trajectories and what each must show
    ("judge",),  # the checks and diagnoses
    ("chaos",),  # `resumeproof chaos`, whose result the terminal renders
    ("report",),  # the verification as one typed object, rendered
    ("fork", "export", "watch"),  # the commands built on a verification's parts; a watched run's history
    ("verification",),  # one verification, end to end
)
# judge/'s own floors: what both evidences share, the observer's records, the summaries read with them, the rounds
JUDGE = (("compare", "parts", "preemption"), ("spread",), ("records",), ("summaries",), ("asked",))
FLOORS = {"verify": STAGES, "verify.judge": JUDGE}  # a package -> its floors, from the ground up
FLOOR = {stage: floor for floor, stages in enumerate(STAGES) for stage in stages}
FLOORED = [(package, p) for package in FLOORS for p in sorted(PACKAGE.joinpath(*package.split(".")).rglob("*.py"))]
# layer -> what it may import under `if TYPE_CHECKING:` alone, for mypy: observe/install.py names observe/observer.py's
# class so that mypy checks the one against the other; at run time sitecustomize loads both by their paths
TYPING_ONLY = {"observe": ("resumeproof.observe",)}


def imported(path: Path) -> list[tuple[str, bool]]:
    """Every module an import statement of `path` names, and whether the statement is at the top level."""
    tree = ast.parse(path.read_text())
    top = {id(node) for node in tree.body}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, id(node) in top) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.module, id(node) in top))
    return found


def typing_only(path: Path) -> set[str]:
    """The modules imported under `if TYPE_CHECKING:`: read by mypy, never imported at run time."""
    blocks = [n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.If)]
    found: set[str] = set()
    for node in (n for b in blocks if ast.unparse(b.test) == "TYPE_CHECKING" for s in b.body for n in ast.walk(s)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
    return found


@pytest.mark.parametrize("module", [p.relative_to(PACKAGE) for p in MODULES], ids=str)
def test_each_layer_imports_only_what_lies_below_it(module: Path):
    forbidden, allowed = FORBIDDEN[module.parts[0]], TYPING_ONLY.get(module.parts[0], ())
    typing = typing_only(PACKAGE / module)
    for name, at_top in imported(PACKAGE / module):
        if PACKAGE / module == TORCH_LOAD and name == "torch" and not at_top:
            continue  # --torch-load, late and explicit
        if name in typing and any(name.startswith(f"{a}.") for a in allowed):
            continue  # for mypy alone
        assert not any(name == f or name.startswith(f"{f}.") for f in forbidden), f"resumeproof/{module}: {name}"


def stage(module: str, package: str = "verify") -> str | None:
    """The stage of `package` a dotted module name lies in (`resumeproof.verify.judge.spread`: judge of verify, spread
    of verify.judge), else None."""
    parts, inside = module.split("."), ["resumeproof", *package.split(".")]
    below = parts[len(inside)] if parts[: len(inside)] == inside and len(parts) > len(inside) else None
    return None if below == "__init__" else below


@pytest.mark.parametrize("package", FLOORS)
def test_every_module_lies_on_a_floor(package: str):
    floors = {name for stages in FLOORS[package] for name in stages}
    folder = PACKAGE.joinpath(*package.split("."))
    for path in sorted(folder.rglob("*.py")):
        name = ".".join(path.relative_to(REPO).with_suffix("").parts)
        assert path == folder / "__init__.py" or stage(name, package) in floors, name


@pytest.mark.parametrize(
    ("package", "module"),
    [
        (package, p.relative_to(PACKAGE))
        for package in FLOORS
        for p in PACKAGE.joinpath(*package.split(".")).rglob("*.py")
    ],
    ids=str,
)
def test_no_stage_imports_one_above_or_beside_it(package: str, module: Path):
    floor = {name: n for n, stages in enumerate(FLOORS[package]) for name in stages}
    own = stage(".".join(("resumeproof", *module.with_suffix("").parts)), package)
    for name, _ in imported(PACKAGE / module):
        other = stage(name, package)
        if own is None or other is None or other == own:
            continue
        assert floor[other] < floor[own], f"resumeproof/{module} ({own}) imports {name} ({other})"


def test_the_floors_catch_the_judge_importing_a_report_and_the_records_the_summaries(tmp_path):
    """The negative control of the floors: imports that run back up are found, inside a function too."""
    module = tmp_path / "bad.py"
    module.write_text("def f():\n    from resumeproof.verify.report import result\n")
    found = [stage(name) for name, _ in imported(module)]
    assert found == ["report"] and FLOOR["report"] > FLOOR["judge"]
    module.write_text("from resumeproof.verify.judge.summaries.diagnosis import Context\n")
    assert [stage(name, "verify.judge") for name, _ in imported(module)] == ["summaries"]
    assert JUDGE.index(("summaries",)) > JUDGE.index(("records",))


def test_the_rules_catch_a_kit_module_that_imports_the_verifier(tmp_path):
    """The negative control of the rule above: an import it forbids is found, even inside a function."""
    module = tmp_path / "bad.py"
    module.write_text("def f():\n    from resumeproof.verify import accept\n")
    assert ("resumeproof.verify", False) in imported(module)


def test_only_an_import_under_type_checking_is_for_mypy_alone(tmp_path):
    module = tmp_path / "install.py"
    module.write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from resumeproof.observe.observer import Observer\n"
        "def f():\n    import resumeproof.observe.block\n"
    )
    assert typing_only(module) == {"resumeproof.observe.observer"}  # the import in f() runs: still forbidden


NO_TORCH = "import runpy, sys\nsys.modules['torch'] = None  # any import of torch now fails\n"


def without_torch(script: str, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    code = NO_TORCH + f"sys.argv = [{script!r}, *sys.argv[1:]]\nrunpy.run_path({script!r}, run_name='__main__')\n"
    return subprocess.run(
        [sys.executable, "-B", "-c", code, *args], cwd=REPO, capture_output=True, text=True, timeout=timeout
    )


def test_a_full_default_verification_passes_with_torch_unimportable_in_the_verifier(tmp_path):
    proc = without_torch("verify_resume.py", "--output", str(tmp_path / "v"))
    assert proc.returncode == 0, proc.stderr
    document = json.loads((tmp_path / "v" / "verification.json").read_text())
    assert document["all_checks_passed"] and document["environment"]["torch"]  # the trainers did use torch


def test_the_chaos_supervisor_runs_with_torch_unimportable(tmp_path):
    args = ("chaos", "--output", str(tmp_path / "c"), "--kills", "2", "--steps", "6", "--seed", "3")
    proc = without_torch("verify_resume.py", *args)
    assert proc.returncode == 0, proc.stderr


def test_flat_inspect_runs_with_torch_unimportable(interrupted_run, tmp_path):
    out = tmp_path / "flat.bin"
    export = [sys.executable, "-B", "-m", "resumeproof", "flat", "export", str(interrupted_run / "checkpoint.pt")]
    subprocess.run([*export, str(out)], cwd=REPO, check=True, capture_output=True)
    code = NO_TORCH + "from resumeproof.cli import main\nmain()\n"
    proc = subprocess.run(
        [sys.executable, "-B", "-c", code, "flat", "inspect", str(out)], cwd=REPO, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert "step 5, 33 parameters" in proc.stdout


@pytest.mark.parametrize("module", [p.relative_to(REPO) for p in VERIFIER_SIDE], ids=str)
def test_every_verifier_side_module_imports_without_torch(module: Path):
    name = ".".join(module.with_suffix("").parts).removesuffix(".__init__")
    code = NO_TORCH + f"import {name}\nprint(sorted(m for m in sys.modules if m.startswith('resumeproof.kit')))\n"
    proc = subprocess.run([sys.executable, "-B", "-c", code], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]", f"{name} loads the trainer kit: {proc.stdout}"


def test_verify_help_imports_no_torch_module():
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-B", "verify_resume.py", "--help"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    imported = [line.split("|")[-1].strip() for line in proc.stderr.splitlines() if "|" in line]
    assert not [m for m in imported if m == "torch" or m.startswith(("torch.", "numpy"))]


def test_signing_an_export_imports_no_torch():
    """model_signing (the export extra), which `export --sign-key` and `check --public-key` import late, loads no torch
    and no NumPy: the verifier's side stays torch-free with it."""
    code = (
        "import sys, model_signing.signing, model_signing.verifying, resumeproof.verify.export.signature\n"
        "print(sorted({'torch', 'numpy'} & set(sys.modules)))"
    )
    proc = subprocess.run([sys.executable, "-B", "-c", code], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0 and proc.stdout.strip() == "[]", proc.stdout + proc.stderr


def test_nothing_but_a_script_imports_a_framework():
    code = (
        "import sys, resumeproof.kit, resumeproof.cli, resumeproof.verify.verification\n"
        "print(sorted({'accelerate', 'lightning', 'transformers'} & set(sys.modules)))"
    )
    proc = subprocess.run([sys.executable, "-B", "-c", code], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0 and proc.stdout.strip() == "[]", proc.stdout + proc.stderr
