"""The typed result: verification.json is written from it, read back into it, and older documents still read."""

import json

import pytest

from resumeproof.common.protocol import CheckKind
from resumeproof.verify import junit, markdown, terminal
from resumeproof.verify.result import Verification
from resumeproof.verify.environment import gpus_differ
from tests.helpers import REPO

OLD = sorted((REPO / "tests" / "data" / "verification-0.1").glob("*.json"))


@pytest.mark.parametrize("path", OLD, ids=lambda p: p.stem)
def test_a_document_written_before_checks_carried_their_identity_still_reads_and_renders(path, tmp_path):
    document = json.loads(path.read_text())
    v = Verification.from_json(document)
    assert v.all_checks_passed == document["all_checks_passed"]
    assert [c.name for c in v.checks] == [c["name"] for c in document["checks"]]
    assert all(c.id.kind is CheckKind.LEGACY for c in v.checks)
    full = document["comparison"]["full_resume"]
    assert (v.full_resume.verdict, v.full_resume.first_mismatch) == (full["verdict"], full["first_mismatch"])
    if full["diagnosis"]:
        assert v.full_resume.diagnosis.named == full["diagnosis"]["lost"]
    junit.write(tmp_path / "junit.xml", v, path)
    assert markdown.summary(v, path).startswith("## resumeproof: ")
    assert terminal.verdict_line(v)


def kept(new, old):
    """`new` cut down to the keys `old` has, at every depth: what an older reader sees of a newer document."""
    if isinstance(old, dict) and isinstance(new, dict):
        return {key: kept(new.get(key), value) for key, value in old.items()}
    if isinstance(old, list) and isinstance(new, list):
        return [kept(a, b) for a, b in zip(new, old, strict=True)]
    return new


@pytest.mark.parametrize("path", OLD, ids=lambda p: p.stem)
def test_a_document_read_and_written_again_keeps_every_value_it_had(path):
    document = json.loads(path.read_text())
    assert kept(Verification.from_json(document).to_json(), document) == document


def test_trajectories_on_different_gpus_are_reported_as_a_resume_across_them():
    h200, a100 = {"name": "NVIDIA H200", "driver": "580.65"}, {"name": "NVIDIA A100", "driver": "570.1"}
    same = {"continuous": {"meta": {"gpu": h200}}, "resumed": {"meta": {"gpu": dict(h200)}}}
    assert gpus_differ(same) is None and gpus_differ({"continuous": {"meta": None}, "resumed": {}}) is None
    other = {"continuous": {"meta": {"gpu": h200}}, "resumed": {"meta": {"gpu": a100}}}
    found = gpus_differ(other)
    assert found == {"continuous": h200, "resumed": a100}
    note = terminal.gpu_note(Verification(error=None, train_cmd="t", environment={"gpus": found}))
    assert note is not None and "NVIDIA H200, 580.65" in note and "resumed: NVIDIA A100" in note
