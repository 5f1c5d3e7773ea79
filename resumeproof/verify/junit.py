"""verification.json as JUnit XML, for the test view of a CI system: one testcase per trajectory and per check.

    <testsuites>                                    one suite per verification
      <testsuite name="resumeproof verify" ...>
        <testcase classname="resumeproof.trajectory" name="resumed" time="1.6"/>
        <testcase classname="resumeproof.check" name="resumed (from step 5) concordant with continuous">
          <failure message="first mismatch history[6].rows: ...; diagnosis: likely lost data ..." ...>

A failed comparison is a `failure` carrying the first mismatch and the diagnosis; a verification
that could not complete (exit 2) is an `error` carrying the reason, on the trajectory at fault or
on a testcase of its own. The shape is the one JUnit consumers share (Jenkins, GitLab, GitHub
test reporters): `tests/data/junit.xsd` states it and a test validates real output against it.
"""

import platform
import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from resumeproof.common.fingerprint import write_atomic

SUITE = "resumeproof verify"


def document_to_xml(document: dict[str, Any], report: Path) -> ET.Element:
    suite = ET.Element("testsuite", name=SUITE, hostname=platform.node(), timestamp=_now())
    properties = ET.SubElement(suite, "properties")
    for name, value in (("train_cmd", document.get("train_cmd", "")), ("verification_json", str(report))):
        ET.SubElement(properties, "property", name=name, value=str(value))
    for name, entry in document.get("trajectories", {}).items():
        _trajectory(suite, name, entry)
    for check in document.get("checks", []):
        _check(suite, check, _diagnosis_of(document, check))
    if document.get("error") and not any(e.get("error") for e in document.get("trajectories", {}).values()):
        case = ET.SubElement(suite, "testcase", classname="resumeproof.verification", name="verification", time="0")
        ET.SubElement(case, "error", message=document["error"], type="could not complete").text = document["error"]
    _count(suite)
    root = ET.Element("testsuites", name="resumeproof")
    root.append(suite)
    for key in ("tests", "failures", "errors", "time"):
        root.set(key, suite.get(key, "0"))
    return root


def write(path: Path, document: dict[str, Any], report: Path) -> None:
    root = document_to_xml(document, report)
    ET.indent(root)
    write_atomic(path, ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n")


def _trajectory(suite: ET.Element, name: str, entry: dict[str, Any]) -> None:
    seconds = entry.get("wall_seconds") or 0.0
    case = ET.SubElement(suite, "testcase", classname="resumeproof.trajectory", name=name, time=f"{seconds:.3f}")
    if entry.get("status") == "skipped":
        ET.SubElement(case, "skipped", message=entry.get("error") or "not run")
    elif entry.get("error"):
        ET.SubElement(case, "error", message=entry["error"], type="could not complete").text = entry["error"]
    ET.SubElement(case, "system-out").text = " ".join(entry.get("argv", [])) + f"\nlog: {entry.get('log')}\n"


def _check(suite: ET.Element, check: dict[str, Any], diagnosis: dict[str, Any] | None) -> None:
    case = ET.SubElement(suite, "testcase", classname="resumeproof.check", name=check["name"], time="0")
    if check["passed"]:
        return
    message = (
        f"first mismatch {check['first_mismatch']}: {check['detail']}" if check["first_mismatch"] else check["detail"]
    )
    if diagnosis:
        where = f" from update {diagnosis['step']}" if diagnosis.get("step") else ""
        message = f"{message}; diagnosis: likely lost {diagnosis['lost']}{where}: {diagnosis['explanation']}"
    failure = ET.SubElement(case, "failure", message=message or "failed", type="resume not exact")
    failure.text = "\n".join(f"{key}: {value}" for key, value in check.items()) + (
        f"\ndiagnosis: {diagnosis}" if diagnosis else ""
    )


def _diagnosis_of(document: dict[str, Any], check: dict[str, Any]) -> dict[str, Any] | None:
    """The diagnosis verification.json holds for the trajectory a check is about."""
    comparison = document.get("comparison") or {}
    for name, entry in {**comparison.get("resumes", {}), "resumed-no-rng": comparison.get("no_rng_resume", {})}.items():
        if check["name"].startswith(f"{name} ") or (name == "resumed-no-rng" and "negative control" in check["name"]):
            return entry.get("diagnosis")
    for part, fault in (document.get("faults") or {}).items():
        if check["name"] == f"resume without {part} diverges":
            return fault.get("diagnosis")
    return None


def _count(suite: ET.Element) -> None:
    cases = suite.findall("testcase")
    suite.set("tests", str(len(cases)))
    suite.set("failures", str(sum(1 for c in cases if c.find("failure") is not None)))
    suite.set("errors", str(sum(1 for c in cases if c.find("error") is not None)))
    suite.set("skipped", str(sum(1 for c in cases if c.find("skipped") is not None)))
    suite.set("time", f"{sum(float(c.get('time', '0')) for c in cases):.3f}")


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S")
