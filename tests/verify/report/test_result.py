"""The typed result (verify/report/result.py, with verify/vocabulary/findings.py's objects): verification.json is
written from it, read back into it, and older documents still read. Every result document (fork.json, chaos's,
EXPORT.json, `check --json` too) is the same JSON, key for key and in order, as the hand-written to_json methods
wrote before common/codec.py (tests/data/documents/, written by that code), and a document of the wrong shape is
refused with one line naming the key."""

import json

import pytest

from resumeproof.common import codec
from resumeproof.common.protocol import CheckKind
from resumeproof.verify.chaos.result import Kill
from resumeproof.verify.report import junit, markdown, terminal
from resumeproof.verify.report.result import Verification
from resumeproof.verify.vocabulary.findings import Check, Diagnosis
from tests.helpers import REPO
from tests.verify.report import documents
from tests.verify.test_settings import SCRIPT_FIELDS, VERIFY, settings_of

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


def test_the_top_level_deterministic_is_determinisms_own_even_where_an_older_document_said_true():
    """A document once wrote `deterministic: true` beside a `determinism` that established nothing: it reads by
    `determinism`, writes null, and its verdict is unchanged (not shown to differ from itself)."""
    document = json.loads(OLD[0].read_text())
    document["deterministic"] = True
    document["determinism"] = {"repeated": False, "deterministic": None, "first_step": None, "first_mismatch": None}
    document["determinism"]["detail"] = None
    v = Verification.from_json(document)
    assert v.to_json()["deterministic"] is None and v.deterministic is True
    document["determinism"].update(repeated=True, deterministic=False, first_step=3, first_mismatch="history[2].loss")
    assert Verification.from_json(document).to_json()["deterministic"] is False


def test_what_check_said_of_a_scripts_own_checkpoint_round_trips_and_is_rendered_beside_the_verdict(tmp_path):
    document = json.loads(OLD[0].read_text())
    name = next(iter(document["trajectories"]))
    line = "runs/x/interrupted/checkpoint-3: refused: rng_state.pth: a pickle that imports numpy"
    document["trajectories"][name]["check"] = {
        "path": "runs/x/interrupted/checkpoint-3",
        "verdict": "refused",
        "line": line,
    }
    v = Verification.from_json(document)
    assert [c.line for c in v.checked()] == [line] and v.to_json()["trajectories"][name]["check"][
        "verdict"
    ] == "refused"
    assert terminal.checked_lines(v) == [
        f"the script's checkpoint, by resumeproof check (not part of the verdict): {line}"
    ]
    assert line in markdown.summary(v, tmp_path) and terminal.verdict_line(
        Verification.from_json(json.loads(OLD[0].read_text()))
    ) == terminal.verdict_line(v)


def test_every_verification_opens_with_the_header_its_settings_give_and_it_survives_the_json():
    asked = settings_of({**VERIFY, **SCRIPT_FIELDS, "points": (6, 3)})
    v = Verification.asked(asked, "resumeproof-observation/1", {"python": "3.11"}, {}, error="why")
    header = (v.error, v.train_cmd, v.resume_cmd, v.steps, v.interrupt_at, v.atol, v.protocol)
    expected = (SCRIPT_FIELDS["train_cmd"], SCRIPT_FIELDS["resume_cmd"], 10, (6, 3), 1e-12)
    assert header == ("why", *expected, "resumeproof-observation/1")
    assert v.allowed == {"unsafe_pickle": [], "opaque": []} and v.environment == {"python": "3.11"}
    back = Verification.from_json(json.loads(json.dumps(v.to_json())))
    assert (back.train_cmd, back.resume_cmd, back.steps, back.interrupt_at, back.atol) == header[1:6]


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
        (lambda d: d["trajectories"]["continuous"].pop("status"), ".trajectories.continuous: missing 'status'"),
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


def test_a_document_that_leaves_out_its_headers_error_and_command_reads_as_it_always_has():
    v = Verification.from_json({"protocol": "p/1", "steps": 3, "interrupt_at": [2]})
    assert (v.error, v.train_cmd, v.steps, v.interrupt_at, v.checks) == (None, "", 3, (2,), [])
