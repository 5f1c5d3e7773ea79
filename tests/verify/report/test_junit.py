"""--junit-xml and --summary-md: what a CI system's test view and job summary show, validated against JUnit's schema
(verify/report/junit.py, and verify/report/markdown.py from the same runs). The pass (--torch-load) and the failure (a
trainer that forgets its optimizer's state) are made once each and also read for what the verifier found in them: the
real loader's checks, the failed resume and its diagnosis (once tests of tests/e2e/test_verify_e2e.py, which ran the
same two verifications again)."""

import xml.etree.ElementTree as ET

import pytest
import xmlschema

from tests.agreements import contradictions
from tests.helpers import REPO, TRAINERS, read_verification, run_verify

SCHEMA = xmlschema.XMLSchema(REPO / "tests" / "data" / "junit.xsd")
SMALL = ("--steps", "4", "--interrupt-at", "2")


def reports(tmp_path, *args):
    junit, md = tmp_path / "junit.xml", tmp_path / "summary.md"
    proc = run_verify("--output", tmp_path / "v", *SMALL, "--junit-xml", junit, "--summary-md", md, *args)
    SCHEMA.validate(junit)  # raises with the reason when the file does not validate
    return proc, ET.parse(junit).getroot(), md.read_text()


@pytest.fixture(scope="module")
def passed(tmp_path_factory):
    """The reference trainer, each checkpoint also loaded with torch.load: (process, JUnit root, Markdown, document)."""
    tmp_path = tmp_path_factory.mktemp("passed")
    return *reports(tmp_path, "--torch-load"), read_verification(tmp_path / "v" / "verification.json")


@pytest.fixture(scope="module")
def failed(tmp_path_factory):
    """A trainer that forgets its optimizer's state on resume: (process, JUnit root, Markdown, document)."""
    tmp_path = tmp_path_factory.mktemp("failed")
    cmd = f"python -B {TRAINERS / 'forgets_optimizer.py'}"
    return *reports(tmp_path, "--train-cmd", cmd), read_verification(tmp_path / "v" / "verification.json")


# One worker for the tests that read one of the two verifications, so that it is made once.
PASSED, FAILED = pytest.mark.xdist_group("junit-passed"), pytest.mark.xdist_group("junit-failed")


def cases(root):
    return {case.get("name"): case for case in root.iter("testcase")}


@PASSED
def test_a_pass_is_one_testcase_per_trajectory_and_per_check_all_green(passed):
    proc, root, md, doc = passed
    assert proc.returncode == 0, proc.stderr
    assert set(cases(root)) == {*doc["trajectories"], *(c["name"] for c in doc["checks"])}
    suite = root.find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == (
        str(len(doc["trajectories"]) + len(doc["checks"])),
        "0",
        "0",
    )
    assert md.startswith("## resumeproof: PASSED (exit 0)")


@FAILED
def test_each_failing_check_is_one_failing_testcase_carrying_the_mismatch_and_the_diagnosis(failed):
    proc, root, md, doc = failed
    assert proc.returncode == 1, proc.stderr
    failed = [c["name"] for c in doc["checks"] if not c["passed"]]
    failures = {name: case.find("failure") for name, case in cases(root).items() if case.find("failure") is not None}
    assert sorted(failures) == sorted(failed)
    message = failures["resumed (from step 2) concordant with continuous"].get("message")
    said = "resumed (from step 2) differs from continuous from update 4 (history[3].loss); lost optimizer"
    assert message.startswith(said)
    assert (
        "first mismatch history[3].loss" in message
        and "diagnosis: lost optimizer at update 3 (the first resumed one)" in message
    )
    assert root.find("testsuite").get("failures") == str(len(failed))
    assert md.startswith("## resumeproof: FAILED (exit 1)") and "| resumed | divergent |" in md and "optimizer" in md
    # the terminal's last line, verification.json, the JUnit suite and the Markdown summary say the same
    line = proc.stderr.strip().splitlines()[-1]
    assert line == doc["verdict"]["line"] == f"FAILED: {said}" and doc["verdict"]["outcome"] == "failed"
    assert root.find("testsuite/properties/property[@name='verdict']").get("value") == line
    assert f"**FAILED:** {said}" in md and [c["failure"] for c in doc["checks"] if not c["passed"]] == [said]


@PASSED
def test_torch_load_option_loads_every_checkpoint_with_the_real_loader(passed):
    proc, _, _, doc = passed
    assert proc.returncode == 0, proc.stderr
    details = [c["detail"] for c in doc["checks"] if c["name"].endswith(": fingerprint and weights_only")]
    assert len(details) == 4
    assert all("torch-free weights_only check, torch.load(weights_only=True))" in detail for detail in details), details


@FAILED
def test_forgotten_optimizer_state_fails_the_full_resume(failed):
    proc, _, _, doc = failed
    assert proc.returncode == 1, proc.stderr
    assert doc["error"] is None
    assert doc["positive"] is False
    assert doc["all_checks_passed"] is False
    full = doc["comparison"]["full_resume"]
    assert full["verdict"] == "divergent"
    assert isinstance(full["first_mismatch"], str)
    assert full["first_mismatch"].split("[")[0].split(".")[0] in ("step", "history", "state", "next", "eval")
    assert full["max_state_deviation"] > 0  # the optimizer's moments really differ
    checks = {c["name"]: c for c in doc["checks"]}
    assert checks["interrupted: history = first 2 records of continuous"]["passed"] is True
    assert checks["resumed (from step 2) concordant with continuous"]["first_mismatch"] == full["first_mismatch"]
    # fresh moments change the weights of update 3, so the loss of update 4 is the first to differ in the files; the
    # observer saw the optimizer's state differ entering update 3, with the same batch, model, loss and gradients
    assert full["diagnosis"]["parts"] == ["optimizer"] and full["diagnosis"]["step"] == 3
    assert full["diagnosis"]["rule"] == "first-update"
    assert "diagnosis resumed: lost optimizer at update 3 (the first resumed one): same generators" in proc.stderr
    check = checks["resumed (from step 2) concordant with continuous"]
    assert (check["kind"], check["trajectory"], check["diagnosis"]) == ("resume", "resumed", full["diagnosis"])
    repeat = doc["trajectories"]["continuous-repeat"]  # a failed comparison asks whether the trainer repeats itself
    assert repeat["status"] == "done" and doc["deterministic"] is True and doc["determinism"]["repeated"] is True
    assert contradictions(doc) == []


@pytest.mark.parametrize(
    ("args", "where"),
    [
        (("--train-cmd", f"python -B {TRAINERS / 'crashing.py'}"), "continuous"),  # a trajectory that failed
        (("--train-cmd", "no-such-trainer-xyz"), "continuous"),
    ],
)
def test_a_verification_that_could_not_complete_is_an_error_on_the_trajectory_at_fault(tmp_path, args, where):
    proc, root, md = reports(tmp_path, *args)
    assert proc.returncode == 2, proc.stderr
    error = cases(root)[where].find("error")
    assert error is not None and error.get("message").startswith(f"{where}: ")
    assert md.startswith("## resumeproof: could not complete (exit 2)")


def test_an_output_that_exists_still_gets_an_error_report(tmp_path):
    (tmp_path / "v").mkdir()
    proc, root, md = reports(tmp_path)
    assert proc.returncode == 2
    assert "already exists" in cases(root)["verification"].find("error").get("message")
    assert "already exists" in md
