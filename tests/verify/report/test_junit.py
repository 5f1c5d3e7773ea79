"""--junit-xml and --summary-md: what a CI system's test view and job summary show, validated against JUnit's schema
(verify/report/junit.py, and verify/report/markdown.py from the same runs)."""

import xml.etree.ElementTree as ET

import pytest
import xmlschema

from tests.helpers import REPO, TRAINERS, read_verification, run_verify

SCHEMA = xmlschema.XMLSchema(REPO / "tests" / "data" / "junit.xsd")
SMALL = ("--steps", "4", "--interrupt-at", "2")


def reports(tmp_path, *args):
    junit, md = tmp_path / "junit.xml", tmp_path / "summary.md"
    proc = run_verify("--output", tmp_path / "v", *SMALL, "--junit-xml", junit, "--summary-md", md, *args)
    SCHEMA.validate(junit)  # raises with the reason when the file does not validate
    return proc, ET.parse(junit).getroot(), md.read_text()


def cases(root):
    return {case.get("name"): case for case in root.iter("testcase")}


def test_a_pass_is_one_testcase_per_trajectory_and_per_check_all_green(tmp_path):
    proc, root, md = reports(tmp_path)
    assert proc.returncode == 0, proc.stderr
    doc = read_verification(tmp_path / "v" / "verification.json")
    assert set(cases(root)) == {*doc["trajectories"], *(c["name"] for c in doc["checks"])}
    suite = root.find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == (
        str(len(doc["trajectories"]) + len(doc["checks"])),
        "0",
        "0",
    )
    assert md.startswith("## resumeproof: PASSED (exit 0)")


def test_each_failing_check_is_one_failing_testcase_carrying_the_mismatch_and_the_diagnosis(tmp_path):
    cmd = f"python -B {TRAINERS / 'forgets_optimizer.py'}"
    proc, root, md = reports(tmp_path, "--train-cmd", cmd)
    assert proc.returncode == 1, proc.stderr
    doc = read_verification(tmp_path / "v" / "verification.json")
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
