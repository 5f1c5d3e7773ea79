"""Every result document is the same JSON, key for key and in the same order, as the hand-written to_json methods
wrote before the codec (tests/data/documents/, written by that code), and each document that is read back reads
into an equal object."""

import json

import pytest

from resumeproof.common.protocol import CheckKind
from resumeproof.verify.report.result import Verification
from resumeproof.verify.vocabulary.findings import Check, Diagnosis
from tests.verify.report import documents


@pytest.mark.parametrize("name", sorted(documents.written()))
def test_each_document_is_written_exactly_as_before(name):
    expected = (documents.DOCUMENTS / f"{name}.json").read_text(encoding="utf-8")
    assert documents.written()[name] == expected


@pytest.mark.parametrize("make", documents.VERIFICATIONS.values(), ids=list(documents.VERIFICATIONS))
def test_a_verification_reads_back_from_its_json_into_an_equal_object(make):
    v = make()
    assert Verification.from_json(json.loads(json.dumps(v.to_json()))) == v


def test_a_diagnosis_written_before_parts_were_listed_reads_its_parts_from_lost():
    old = {"lost": "optimizer, scheduler", "rule": "counters", "step": 6, "explanation": "not restored"}
    assert Diagnosis.from_json(old) == Diagnosis(
        lost=("optimizer", "scheduler"), rule="counters", step=6, evidence="", explanation="not restored"
    )
    assert Diagnosis.from_json({**old, "lost": "random state"}).lost == ()


def test_a_check_written_before_checks_carried_their_identity_reads_as_legacy():
    old = {"name": "full resume", "passed": False, "max_abs_diff": 0.5, "first_mismatch": "state.w", "detail": None}
    c = Check.from_json(old)
    assert (c.id.kind, c.id.trajectory, c.id.part, c.diagnosis) == (CheckKind.LEGACY, None, None, None)
    assert (c.name, c.passed, c.max_abs_diff, c.first_mismatch) == ("full resume", False, 0.5, "state.w")
