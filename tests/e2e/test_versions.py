"""Resumes across versions: the reference trainer's continuous and interrupted runs by this checkout, its resumes by a
next version of its code (--resume-cmd; tests/trainers/versions/) or another interpreter. The verdict tells apart
"restored exactly, the trajectory changed at update j in part P" (the resume's code computes otherwise: no part is
named lost) from "lost part P at the restore", and passes the version that changes nothing; verification.json records
both environments (judge/records/versions.py)."""

import shlex
import site
import subprocess
import sys

import pytest

from resumeproof.verify.report.result import Verification
from tests.helpers import REPO, SMALL_SCRIPT, reusing, verification

pytestmark = pytest.mark.xdist_group("versions")  # the runs of this checkout made once, the later versions reuse them

VERSIONS = REPO / "tests" / "trainers" / "versions"
ARGS = ("--steps", "10", "--interrupt-at", "5", "--jobs", "2")


@pytest.fixture(scope="module")
def verified(tmp_path_factory):
    return reusing(tmp_path_factory, *ARGS)


def by(version: str) -> tuple[str, str]:
    return "--resume-cmd", f"{shlex.quote(sys.executable)} -B {shlex.quote(str(VERSIONS / version))}"


def checks_of(doc: dict, kind: str) -> list[dict]:
    return [c for c in doc["checks"] if c["kind"] == kind and c["trajectory"] == "resumed"]


@pytest.fixture(scope="module")
def same_code(verified):
    """No --resume-cmd: one environment, judged as always (the first verification: its runs are reused)."""
    proc, doc, _ = verified("same")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return doc


def test_one_environment_is_no_resume_across_versions(same_code):
    assert "across" not in same_code
    assert "other code" not in same_code["verdict"]["line"]


def test_a_kernel_change_restores_exactly_and_changes_the_trajectory_at_the_first_resumed_updates_loss(
    same_code, verified
):
    proc, doc, _ = verified("kernel", *by("kernel.py"))
    assert proc.returncode == 1, proc.stdout[-3000:]
    assert doc["across"]["resume"]["script"].endswith("kernel.py")
    assert any(d.startswith("script ") for d in doc["across"]["differs"]), doc["across"]
    (restore,) = checks_of(doc, "restore")
    assert restore["passed"] is True
    (resume,) = checks_of(doc, "resume")
    diagnosis = resume["diagnosis"]
    assert (diagnosis["rule"], diagnosis["parts"], diagnosis["lost"], diagnosis["step"]) == (
        "changed-code",
        [],
        "none",
        6,
    )
    assert "the loss differs" in diagnosis["explanation"] and "same model" in diagnosis["explanation"]
    assert doc["comparison"]["resumes"]["resumed"]["verdict"] == "changed"
    line = doc["verdict"]["line"]
    assert line.startswith("FAILED: resumed by other code (script ")
    assert "from update 6 (history[5].loss)" in line and "every part restored exactly" in line
    assert "no part was lost" in line and "lost " not in line.replace("no part was lost", "")
    assert not [name for name in doc["trajectories"] if name.startswith("probe-")]  # no part is looked for
    assert Verification.from_json(doc).to_json() == doc  # read back as written


def test_a_schedule_change_moves_the_learning_rate_at_a_later_update(same_code, verified):
    proc, doc, _ = verified("schedule", *by("schedule.py"))
    assert proc.returncode == 1, proc.stdout[-3000:]
    (restore,) = checks_of(doc, "restore")
    assert restore["passed"] is True
    (resume,) = checks_of(doc, "resume")
    assert resume["diagnosis"]["rule"] == "changed-code" and resume["diagnosis"]["step"] == 7
    assert "moved first at update 7: the learning rate" in resume["diagnosis"]["explanation"]
    assert resume["first_mismatch"] == "history[6].lr"


def test_a_version_that_drops_the_scheduler_on_load_loses_it_at_the_restore(same_code, verified):
    proc, doc, _ = verified("drops", *by("drops_scheduler.py"))
    assert proc.returncode == 1, proc.stdout[-3000:]
    (restore,) = checks_of(doc, "restore")
    assert restore["passed"] is False
    assert (restore["diagnosis"]["rule"], restore["diagnosis"]["parts"]) == ("restore", ["scheduler"])
    (resume,) = checks_of(doc, "resume")
    assert resume["diagnosis"] is None  # named once, by the restore's check
    entry = doc["comparison"]["resumes"]["resumed"]
    assert (entry["verdict"], entry["diagnosis"]["parts"]) == ("divergent", ["scheduler"])
    line = doc["verdict"]["line"]
    assert "resumed by other code" in line and "lost scheduler" in line and "changed by" not in line


@pytest.mark.parametrize("version", ["kernel.py", "kernel_lies_about_omit.py"])
def test_under_other_code_a_fault_is_caught_only_where_its_first_update_is_fed_otherwise(same_code, verified, version):
    """Every resume by the kernel's version diverges, whatever it omits: a fault counts as caught only where its first
    update is fed otherwise than the continuous run's (its optimizer's state), never by the divergence alone (a
    version that says it omitted the optimizer and restored it)."""
    proc, doc, _ = verified(f"faults-{version}", *by(version), "--faults", "optimizer")
    assert proc.returncode == 1, proc.stdout[-3000:]
    fault = doc["faults"]["optimizer"]
    (check,) = [c for c in doc["checks"] if c["kind"] == "fault"]
    negative = [c for c in doc["checks"] if c["kind"] == "negative-control"]
    assert [c["passed"] for c in negative] == [True]  # its generators are fed otherwise: it shows what it blocks
    if version == "kernel.py":
        assert (fault["status"], check["passed"]) == ("caught", True)
    else:
        assert (fault["status"], check["passed"]) == ("not-caught", False)
        assert "its first update is fed what the continuous run's was" in check["detail"]
        assert fault["diagnosis"]["rule"] == "changed-code"


@pytest.fixture(scope="module")
def other_interpreter(tmp_path_factory):
    """Another virtual environment, which sees this one's packages and this checkout (a .pth file): the same torch
    and code, another interpreter."""
    folder = tmp_path_factory.mktemp("venv") / "other"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True, timeout=120)
    (packages,) = folder.glob("lib/python*/site-packages")
    (packages / "this.pth").write_text("\n".join([*site.getsitepackages(), str(REPO)]) + "\n")
    return folder / "bin" / "python"


def test_another_interpreter_with_the_same_code_passes_and_says_where_it_resumed(
    same_code, verified, other_interpreter
):
    resume = f"{shlex.quote(str(other_interpreter))} -B -m resumeproof.reference"
    proc, doc, _ = verified("interpreter", "--resume-cmd", resume)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert [d.split(" ")[0] for d in doc["across"]["differs"]] == ["interpreter"]
    assert doc["across"]["resume"]["executable"] == str(other_interpreter)
    assert doc["across"]["run"]["code_sha256"] == doc["across"]["resume"]["code_sha256"]
    (restore,) = checks_of(doc, "restore")
    assert restore["passed"] is True
    line = doc["verdict"]["line"]
    assert line.startswith("PASSED: resumed by other code (interpreter ")
    assert "every restore exact and every resume concordant" in line


SCRIPT = SMALL_SCRIPT.replace("SEED", "torch.manual_seed(0)").replace(" + JITTER * model[0].weight.sum()", "")
LOSS = "model(x).pow(2).mean()"
OBSERVED = ("--observe", "--steps", "4", "--interrupt-at", "2", "--jobs", "2", "--checkpoint", "{run}/{step}.pt")


@pytest.fixture(scope="module")
def scripts(tmp_path_factory):
    """The script, and its next versions in other folders (another checkout): one whose loss is computed otherwise,
    one that no longer loads the optimizer's state."""
    root = tmp_path_factory.mktemp("scripts")
    versions = {
        "a": SCRIPT,
        "kernel": SCRIPT.replace(LOSS, "((model(x) * model(x)).sum() / 4)"),
        "optimizer": SCRIPT.replace(' optimizer.load_state_dict(saved["optimizer"])', ""),
    }
    for name, text in versions.items():
        (root / name).mkdir()
        (root / name / "train.py").write_text(text)
    return root


def observed(scripts, version: str) -> tuple[str, ...]:
    def train(name: str) -> str:
        return f"{shlex.quote(sys.executable)} -B {shlex.quote(str(scripts / name / 'train.py'))} {{run}} {{steps}}"

    return (*OBSERVED, "--train-cmd", train("a"), "--resume-cmd", f"{train(version)} {{checkpoint}}")


def test_an_observed_script_resumed_by_a_version_that_computes_its_loss_otherwise_is_restored_exactly(
    tmp_path_factory, scripts
):
    proc, doc, _ = verification(
        tmp_path_factory, "script-kernel", *observed(scripts, "kernel"), "--faults", "optimizer"
    )
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert doc["faults"]["optimizer"]["status"] == "caught"  # fed another optimizer state: shows what it blocks
    (differs,) = doc["across"]["differs"]
    assert differs.startswith("script ") and differs.endswith("/train.py"), differs
    (restore,) = checks_of(doc, "restore")
    assert restore["passed"] is True
    (resume,) = checks_of(doc, "resume")
    assert resume["diagnosis"]["rule"] == "changed-code" and resume["diagnosis"]["step"] == 3
    assert "the first resumed one" in resume["diagnosis"]["explanation"]
    assert doc["comparison"]["resumes"]["resumed"]["verdict"] == "changed"
    assert "every part restored exactly" in doc["verdict"]["line"]


def test_an_observed_script_resumed_by_a_version_that_no_longer_loads_the_optimizer_loses_it_at_the_restore(
    tmp_path_factory, scripts
):
    proc, doc, _ = verification(tmp_path_factory, "script-optimizer", *observed(scripts, "optimizer"))
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    (differs,) = doc["across"]["differs"]
    assert differs.startswith("script ") and differs.endswith("/train.py"), differs
    (restore,) = checks_of(doc, "restore")
    assert restore["passed"] is False and restore["diagnosis"]["parts"] == ["optimizer"]
    line = doc["verdict"]["line"]
    assert "resumed by other code" in line and "lost optimizer" in line and "changed by" not in line
