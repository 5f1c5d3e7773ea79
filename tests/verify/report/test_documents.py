"""Every result document is the same JSON, key for key and in the same order, as the hand-written to_json methods
wrote before the codec (tests/data/documents/, written by that code), and each document that is read back reads
into an equal object."""

import json

import pytest

from resumeproof.common import codec
from resumeproof.common.protocol import CheckKind
from resumeproof.verify.chaos.result import Kill
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
    assert codec.decode(Diagnosis, old) == Diagnosis(
        lost=("optimizer", "scheduler"), rule="counters", step=6, evidence="", explanation="not restored"
    )
    assert codec.decode(Diagnosis, {**old, "lost": "random state"}).lost == ()


def test_a_check_written_before_checks_carried_their_identity_reads_as_legacy():
    old = {"name": "full resume", "passed": False, "max_abs_diff": 0.5, "first_mismatch": "state.w", "detail": None}
    c = codec.decode(Check, old)
    assert (c.id.kind, c.id.trajectory, c.id.part, c.diagnosis) == (CheckKind.LEGACY, None, None, None)
    assert (c.name, c.passed, c.max_abs_diff, c.first_mismatch) == ("full resume", False, 0.5, "state.w")


def test_an_old_document_read_in_a_verification_reads_its_diagnoses_and_checks_as_legacy():
    document = json.loads((documents.DOCUMENTS / "verification-failed.json").read_text(encoding="utf-8"))
    for c in document["checks"]:
        del c["kind"]
    del document["comparison"]["full_resume"]["diagnosis"]["parts"]
    del document["comparison"]["resumes"]["resumed"]["diagnosis"]["parts"]
    v = Verification.from_json(document)
    assert {c.id.kind for c in v.checks} == {CheckKind.LEGACY} and v.legacy_positive is False
    assert v.resumes["resumed"].diagnosis == documents.LOST_OPTIMIZER


@pytest.mark.parametrize(
    ("spoil", "said"),
    [
        (lambda d: d["checks"][1].update(passed="no"), "verification.json.checks[1].passed: expected bool, got a str"),
        (lambda d: d["checks"][0].pop("name"), "verification.json.checks[0]: missing 'name'"),
        (lambda d: d["checks"][0].update(kind="hunch"), "verification.json.checks[0].kind: 'hunch' is not one of"),
        (lambda d: d.pop("train_cmd"), "verification.json: missing 'train_cmd'"),
        (lambda d: d["trajectories"]["resumed"].update(argv="python"), ".trajectories.resumed.argv: expected an array"),
        (lambda d: d["faults"]["rng"].update(mismatches=True), ".faults.rng.mismatches: expected int, got bool"),
        (lambda d: d.update(comparison=[]), "verification.json.comparison: expected an object, got an array"),
        (lambda d: d["determinism"]["spread"]["updates"].pop(), "spread.envelope: not one value per update"),
        (lambda d: d["determinism"]["spread"].update(runs="a"), "spread.runs: expected an array, got a string 'a'"),
    ],
)
def test_a_document_of_the_wrong_shape_is_refused_with_one_line_naming_the_key(spoil, said):
    document = json.loads((documents.DOCUMENTS / "verification-failed.json").read_text(encoding="utf-8"))
    spoil(document)
    with pytest.raises(codec.CodecError) as refused:
        Verification.from_json(document)
    assert said in str(refused.value) and "\n" not in str(refused.value)


def test_a_kill_under_torchrun_is_written_with_its_rank_as_chaos_wrote_it_before():
    assert codec.encode(Kill(signal="SIGKILL", phase="writing", step=4, rank=1)) == {
        "signal": "SIGKILL",
        "phase": "writing",
        "step": 4,
        "rank": 1,
    }
