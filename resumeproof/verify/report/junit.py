"""A verification as JUnit XML, for the test view of a CI system: one testcase per trajectory and per check.

    <testsuites>                                    one suite per verification
      <testsuite name="resumeproof verify" ...>
        <testcase classname="resumeproof.trajectory" name="resumed" time="1.6"/>
        <testcase classname="resumeproof.resume" name="resumed (from step 5) concordant with continuous">
          <failure message="resumed (from step 5) differs from continuous from update 7 (history[6].rows); likely
                            lost data | first mismatch history[6].rows: ... | diagnosis: likely lost data ..." ...>

A check's testcase is classed by its kind (resumeproof.resume, resumeproof.fault, resumeproof.determinism,
...). A failed comparison is a `failure` carrying what failed (the sentence the verdict line says,
verify/report/verdict.py), the first mismatch and the check's own diagnosis; the suite's `verdict` property is the
terminal's last line; a verification that could not complete (exit 2) is an `error` carrying the reason, on the
trajectory at fault or on a testcase of its own. The shape is the one JUnit consumers share (Jenkins, GitLab,
GitHub test reporters): `tests/data/junit.xsd` states it and a test validates real output against it.
"""

import platform
import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from pathlib import Path

from resumeproof.common import codec
from resumeproof.common.fingerprint import write_atomic
from resumeproof.verify.report.result import TrajectoryRecord, Verification
from resumeproof.verify.report.verdict import failure
from resumeproof.verify.vocabulary.findings import Check
from resumeproof.verify.vocabulary.status import Status

SUITE = "resumeproof verify"


def to_xml(v: Verification, report: Path) -> ET.Element:
    suite = ET.Element("testsuite", name=SUITE, hostname=platform.node(), timestamp=_now())
    properties = ET.SubElement(suite, "properties")
    for name, value in (("train_cmd", v.train_cmd), ("verification_json", str(report)), ("verdict", v.verdict.line)):
        ET.SubElement(properties, "property", name=name, value=value)
    for name, record in v.trajectories.items():
        _trajectory(suite, name, record)
    for check in v.checks:
        _check(suite, check, failure(check, v))
    if v.error and not any(r.error for r in v.trajectories.values()):
        case = ET.SubElement(suite, "testcase", classname="resumeproof.verification", name="verification", time="0")
        ET.SubElement(case, "error", message=v.error, type="could not complete").text = v.error
    _count(suite)
    root = ET.Element("testsuites", name="resumeproof")
    root.append(suite)
    for key in ("tests", "failures", "errors", "time"):
        root.set(key, suite.get(key, "0"))
    return root


def write(path: Path, v: Verification, report: Path) -> None:
    root = to_xml(v, report)
    ET.indent(root)
    write_atomic(path, ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n")


def _trajectory(suite: ET.Element, name: str, record: TrajectoryRecord) -> None:
    seconds = record.wall_seconds or 0.0
    case = ET.SubElement(suite, "testcase", classname="resumeproof.trajectory", name=name, time=f"{seconds:.3f}")
    if record.status == Status.SKIPPED:
        ET.SubElement(case, "skipped", message=record.error or "not run")
    elif record.error:
        ET.SubElement(case, "error", message=record.error, type="could not complete").text = record.error
    ET.SubElement(case, "system-out").text = " ".join(record.argv) + f"\nlog: {record.log}\n"


def _check(suite: ET.Element, check: Check, said: str | None) -> None:
    """A check's testcase; a failed one's message is what failed (the verdict's own sentence), then the first
    mismatch and the diagnosis."""
    case = ET.SubElement(suite, "testcase", classname=f"resumeproof.{check.id.kind}", name=check.name, time="0")
    if check.not_applicable is not None:  # it blocked nothing the script calls: skipped, with the call it never made
        ET.SubElement(case, "skipped", message=f"not applicable: {check.not_applicable}")
    if said is None:
        return
    first = f"first mismatch {check.first_mismatch}: {check.detail}" if check.first_mismatch else check.detail
    why = f"diagnosis: {check.diagnosis.sentence()}" if check.diagnosis else ""
    message = " | ".join(x for x in (said, first, why) if x)
    failed = ET.SubElement(case, "failure", message=message, type="resume not exact")
    failed.text = "\n".join(f"{key}: {value}" for key, value in codec.encode(check).items() if value is not None)


def _count(suite: ET.Element) -> None:
    cases = suite.findall("testcase")
    suite.set("tests", str(len(cases)))
    suite.set("failures", str(sum(1 for c in cases if c.find("failure") is not None)))
    suite.set("errors", str(sum(1 for c in cases if c.find("error") is not None)))
    suite.set("skipped", str(sum(1 for c in cases if c.find("skipped") is not None)))
    suite.set("time", f"{sum(float(c.get('time', '0')) for c in cases):.3f}")


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S")
