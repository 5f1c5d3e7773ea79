"""The verdict line says what failed (verify/report/verdict.py): every kind of failing check, on hand-built
verifications, its sentence built once and said alike by the terminal, Markdown, JUnit, verification.json and the
pytest plugin."""

import io
from dataclasses import replace
from pathlib import Path

import pytest
import xmlschema
from rich.console import Console

from resumeproof.common.protocol import CheckId, CheckKind
from resumeproof.pytest_plugin import Outcome
from resumeproof.verify.chaos.result import ChaosResult, Kill
from resumeproof.verify.report import junit, markdown, terminal
from resumeproof.verify.report.result import Verification
from resumeproof.verify.report.verdict import SHOWN, failure
from resumeproof.verify.vocabulary.band import Band
from resumeproof.verify.vocabulary.findings import (
    AT_RESTORE,
    CHANGED_CODE,
    DIRECT,
    Across,
    Check,
    Determinism,
    Diagnosis,
    Fault,
    Side,
)
from tests.helpers import REPO

REPORT = Path("runs/x/verification.json")
NO_RANDOM_STATE = "the checkpoint restores no random state, or the trainer ignores --omit-rng-restore"


def lost(*parts: str, rule: str = DIRECT, step: int = 6) -> Diagnosis:
    return Diagnosis(lost=parts, rule=rule, step=step, evidence="records", explanation="the evidence says so")


def check(kind: CheckKind, trajectory: str | None, part: str | None = None, **given) -> Check:
    given.setdefault("passed", False)
    return Check(id=CheckId(kind=kind, trajectory=trajectory, part=part), name=f"{kind} {trajectory}", **given)


def failing(*checks: Check, **given) -> Verification:
    passed = check(CheckKind.CHECKPOINT, "continuous", passed=True)
    return Verification(error=None, train_cmd="python -B train.py", checks=[passed, *checks], **given)


def resumed(diagnosis: Diagnosis | None, trajectory: str = "resumed", k: int = 5, **given) -> Check:
    given.setdefault("first_mismatch", f"history[{k}].rows")
    given.setdefault("first_update", k + 1)
    return check(CheckKind.RESUME, trajectory, resumed_at=k, diagnosis=diagnosis, **given)


def fault(part: str, identical: bool) -> Fault:
    return Fault(
        detected=False,
        cause=f"{part} not restored",
        caught_by=(),
        first_mismatch=None,
        max_deviation=0.0,
        mismatches=0,
        diagnosis=None,
        identical_to_full_resume=identical,
    )


def not_deterministic(spread: Band | None = None) -> Determinism:
    detail = "the continuous run and its repeat differ"
    return Determinism(
        repeated=True, deterministic=False, first_step=2, first_mismatch="history[1].loss", detail=detail
    )


BAND = Band(runs=("continuous", "continuous-repeat", "continuous-repeat-2"), updates={}, end={})

# Every kind of failing check, in two styles where the verifications differ (a protocol trainer's summaries, a
# script's records under --observe): the verification, then its verdict line.
CASES = {
    "resume, direct evidence": (
        failing(resumed(lost("rng-numpy"))),
        "FAILED: resumed (from step 5) differs from continuous from update 6 (history[5].rows); lost rng-numpy",
    ),
    "resume, the summaries' rules": (
        failing(resumed(lost("data", rule="rows"), first_mismatch="history[5].loss")),
        "FAILED: resumed (from step 5) differs from continuous from update 6 (history[5].loss); likely lost data",
    ),
    "resume, nothing named": (
        failing(resumed(lost(rule="none"), first_mismatch="state.model.w", first_update=None)),
        "FAILED: resumed (from step 5) differs from continuous at state.model.w; cause unknown",
    ),
    "resume, the records of --observe": (
        failing(resumed(None, "resumed-3", 3, first_mismatch="update 4 (rank 1): loss")),
        "FAILED: resumed-3 (from step 3) differs from continuous from update 4 (update 4 (rank 1): loss); "
        "cause unknown",
    ),
    "chain segment": (
        failing(resumed(lost("progress", rule="step"), "chain1-seg2", 3, first_mismatch="history[3].lr")),
        "FAILED: chain1-seg2 (from step 3) differs from continuous from update 4 (history[3].lr); likely lost progress",
    ),
    "restore, records": (
        failing(
            check(
                CheckKind.RESTORE,
                "resumed",
                resumed_at=4,
                first_mismatch="optimizer state",
                diagnosis=lost("optimizer"),
            ),
            resumed(None, k=4, first_mismatch="update 5: loss"),
        ),
        "FAILED: resumed's first update does not start from what the interrupted process held for update 5 "
        "(it differs at optimizer state); lost optimizer",
    ),
    "restore, a resume of 0 updates": (
        failing(
            check(
                CheckKind.RESTORE,
                "resumed-7",
                resumed_at=7,
                first_mismatch="state.sched.last_epoch",
                diagnosis=lost("scheduler", rule=AT_RESTORE, step=8),
            )
        ),
        "FAILED: resumed-7's first update does not start from what the interrupted process held for update 8 "
        "(it differs at state.sched.last_epoch); lost scheduler",
    ),
    "fault not caught, summaries": (
        failing(
            check(CheckKind.FAULT, "fault-optimizer", "optimizer", resumed_at=5),
            faults={"optimizer": fault("optimizer", True)},
        ),
        "FAILED: resume without optimizer did not diverge (identical to the full resume)",
    ),
    "fault not caught, records": (
        failing(
            check(CheckKind.FAULT, "fault-ema", "ema", detail="ema's load_state_dict made a no-op"),
            faults={"ema": fault("ema", False)},
        ),
        "FAILED: resume without ema did not diverge (ema's load_state_dict made a no-op)",
    ),
    "negative control": (
        failing(check(CheckKind.NEGATIVE_CONTROL, "resumed-no-rng", diagnosis=lost(rule="identical-to-full-resume"))),
        "FAILED: resumed-no-rng, the resume without RNG restore (the negative control), did not diverge from "
        "continuous: the evidence says so",
    ),
    "prefix": (
        failing(check(CheckKind.PREFIX, "interrupted", first_mismatch="history[2].loss", first_update=3)),
        "FAILED: interrupted's history is not the first records of continuous: it differs from update 3 "
        "(history[2].loss); cause unknown",
    ),
    "finite": (
        failing(
            check(CheckKind.FINITE, "continuous", detail="non-finite value in the model's state at state.m.w (nan)")
        ),
        "FAILED: continuous holds non-finite value in the model's state at state.m.w (nan)",
    ),
    "cadence": (
        failing(check(CheckKind.CADENCE, "continuous-every-1", first_mismatch="history[3].loss", first_update=4)),
        "FAILED: continuous-every-1, which writes a checkpoint every step, differs from continuous from update 4 "
        "(history[3].loss); cause unknown",
    ),
    "checkpoint": (
        failing(check(CheckKind.CHECKPOINT, "interrupted", detail="refused: a pickle that imports os")),
        "FAILED: interrupted's checkpoint fails its fingerprint or weights_only check: "
        "refused: a pickle that imports os",
    ),
    "not deterministic": (
        failing(
            check(CheckKind.DETERMINISM, "continuous-repeat"),
            resumed(lost(rule="not-deterministic")),
            determinism=not_deterministic(),
        ),
        "NOT DETERMINISTIC: the continuous run and its repeat differ from update 2 (history[1].loss); "
        "no part is blamed",
    ),
    "within spread, outside the band": (
        failing(
            resumed(lost(rule="outside-spread"), first_mismatch="history[6].loss", first_update=7),
            determinism=replace(not_deterministic(), spread=BAND),
        ),
        "FAILED: not deterministic (differs from itself from update 2 (history[1].loss)), so judged by its restore and "
        "its measured spread; failed: resumed (from step 5) leaves its measured run-to-run spread from update 7 "
        "(history[6].loss); cause unknown",
    ),
    "a legacy document's check": (
        failing(
            Check(id=CheckId(kind=CheckKind.LEGACY), name="resumed concordant", passed=False, first_mismatch="step")
        ),
        "FAILED: resumed concordant: does not hold (at step)",
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_every_kind_of_failing_check_says_what_failed_on_the_verdict_line(case):
    v, line = CASES[case]
    assert v.verdict.line == line


@pytest.mark.parametrize("case", CASES)
def test_a_sentence_blames_only_what_its_own_diagnosis_names(case):
    """The verdict and the diagnosis never contradict: a part named is the diagnosis's, in its words; none where it
    names none, nor where the trainer differs from itself."""
    v, _ = CASES[case]
    for c in v.failed():
        said = failure(c, v) or ""
        if c.diagnosis is not None and c.diagnosis.lost and v.deterministic:
            assert said.endswith(c.diagnosis.head), said
        elif c.id.kind is not CheckKind.RESUME or c.diagnosis is not None:  # a resume's restore may name it
            assert "lost " not in said, said


def test_a_resume_without_its_own_diagnosis_blames_what_its_restore_found_and_the_line_says_the_restore_once():
    v, line = CASES["restore, records"]
    [_, resume] = v.failed()
    assert (
        failure(resume, v)
        == "resumed (from step 4) differs from continuous from update 5 (loss); lost optimizer (at its restore)"
    )
    assert line.count("resumed") == 1 and "held for update 5" in line


def test_beyond_the_first_three_failed_trajectories_the_line_names_the_rest():
    checks = [resumed(lost("data", rule="rows"), f"resumed-{k}", k) for k in (2, 3, 4, 5, 6)]
    v = failing(*checks)
    said = v.verdict.said
    assert said.count("differs from continuous") == SHOWN
    assert said.endswith(". Also failed: resumed-5, resumed-6")


def test_a_passed_check_has_no_failure_and_a_pass_or_an_error_reads_as_before():
    ok = failing(check(CheckKind.RESUME, "resumed", passed=True))
    assert failure(ok.checks[1], ok) is None and ok.verdict.line.startswith("PASSED: every resume concordant")
    broken = Verification(error="continuous: exit 1", train_cmd="t")
    assert broken.verdict.line == "could not complete: continuous: exit 1" and broken.verdict.exit_code == 2


def plain(markup: str) -> str:
    out = io.StringIO()
    Console(file=out, width=1000, color_system=None, soft_wrap=True).print(markup)
    return out.getvalue().strip()


@pytest.mark.parametrize("case", ["restore, records", "fault not caught, summaries", "within spread, outside the band"])
def test_the_terminal_markdown_junit_the_json_and_the_pytest_plugin_say_the_same(case, tmp_path):
    v, line = CASES[case]
    assert plain(terminal.verdict_line(v)) == line
    label, said = line.split(": ", 1)
    md = markdown.summary(v, REPORT)
    assert f"**{label}:** {said}" in md
    root = junit.to_xml(v, REPORT)
    assert root.find("testsuite/properties/property[@name='verdict']").get("value") == line
    document = v.to_json()
    assert document["verdict"] == {"outcome": v.verdict.outcome, "exit_code": 1, "line": line}
    assert Verification.from_json(document).verdict.line == line  # read back, it says the same
    explained = Outcome(1, REPORT, document, "").explanation
    assert explained.splitlines()[0] == f"resumeproof {line}"
    failures = {case.get("name"): case.find("failure") for case in root.iter("testcase")}
    for c, written in zip(v.checks, document["checks"], strict=True):
        sentence = failure(c, v)
        assert written["failure"] == sentence
        if sentence is not None:
            assert failures[c.name].get("message").startswith(sentence)
            assert f"| {c.name} | {sentence} |" in md and f"failed: {sentence}" in explained


def test_a_failed_chaos_run_says_which_of_its_claims_does_not_hold():
    claims = [
        ("final summary concordant with continuous", False, "history[3].loss"),
        ("all 4 signals delivered", True, None),
    ]
    checks = tuple(Check(id=CheckId(kind=CheckKind.CHAOS), name=n, passed=p, first_mismatch=f) for n, p, f in claims)
    result = ChaosResult(
        checks=checks,
        first_mismatch="history[3].loss",
        kills=(Kill(signal="SIGKILL", phase="step", step=3),),
        trainer_starts=2,
        replayed_steps=1,
        broken_log_lines=0,
        kills_without_valid_generation=(),
        settings={},
    )
    out = io.StringIO()
    terminal.print_chaos(Console(file=out, width=200, color_system=None, soft_wrap=True), result)
    last = out.getvalue().strip().splitlines()[-1]
    assert last == "FAILED: final summary concordant with continuous: does not hold (at history[3].loss)"


def test_a_pass_with_faults_that_did_not_apply_lists_them_in_every_report_and_junit_skips_them(tmp_path):
    """`--faults all` under --observe on a script with no scheduler and no GradScaler: those two faults blocked
    nothing, so the verification passes and every report says which call the script never made."""
    from resumeproof.verify.judge.records import applies

    faults, checks = {}, [check(CheckKind.RESUME, "resumed", passed=True)]
    for part in ("model", "optimizer"):
        why = lost(part)
        faults[part] = Fault(
            detected=True,
            cause=f"{part}'s load_state_dict made a no-op",
            caught_by=("loss",),
            first_mismatch="update 4: loss",
            max_deviation=0.5,
            mismatches=3,
            diagnosis=why,
            identical_to_full_resume=False,
        )
        checks.append(check(CheckKind.FAULT, f"fault-{part}", part, passed=True, diagnosis=why))
    for part in ("scheduler", "scaler"):
        faults[part], unapplied = applies.fault(part, 3, f"the script never called {applies.RESTORERS[part]}")
        checks.append(unapplied)
    v = failing(*checks, faults=faults, steps=6, continuous_made=7)
    said = (
        "all 2 faults that applied caught; not applicable: scheduler (the script never called an LR scheduler's "
        "load_state_dict), scaler (the script never called torch.amp.GradScaler.load_state_dict)"
    )
    assert v.verdict.outcome == "passed" and v.verdict.line.endswith(said), v.verdict.line
    document = v.to_json()
    assert document["blind_to"] == [] and list(document["not_applicable"]) == ["scheduler", "scaler"]
    assert (
        document["faults"]["scaler"]["status"] == "not-applicable" and document["faults"]["model"]["status"] == "caught"
    )
    assert document["notes"] == ["the continuous run made 7 updates; the first 6 are compared"]
    again = Verification.from_json(document)
    assert again.to_json() == document  # status and notes are computed again, the same
    out = io.StringIO()
    terminal.print_report(Console(file=out, width=200, color_system=None, soft_wrap=True), v)
    shown = out.getvalue()
    assert "not applicable: resume without scaler: the script never called torch.amp.GradScaler" in shown
    assert "note: the continuous run made 7 updates; the first 6 are compared" in shown
    md = markdown.summary(v, REPORT)
    assert "| scheduler | not applicable |  | the script never called an LR scheduler's load_state_dict |" in md
    assert "Note: the continuous run made 7 updates; the first 6 are compared." in md
    root = junit.to_xml(v, REPORT)
    skipped = {
        c.get("name"): c.find("skipped").get("message") for c in root.iter("testcase") if c.find("skipped") is not None
    }
    assert sorted(skipped.values()) == sorted(
        f"not applicable: {faults[p].not_applicable}" for p in ("scaler", "scheduler")
    )
    assert root.find("testsuite").get("skipped") == "2" and root.find("testsuite").get("failures") == "0"
    junit.write(tmp_path / "junit.xml", v, REPORT)
    xmlschema.XMLSchema(REPO / "tests" / "data" / "junit.xsd").validate(tmp_path / "junit.xml")  # raises with why


SIDE = Side(
    executable="/a/bin/python", python="3.11.7", torch="2.13.0+cpu", script="train.py", code_sha256="0" * 64, files=3
)
ACROSS = Across(run=SIDE, resume=replace(SIDE, torch="2.14.0+cpu"), differs=("torch 2.13.0+cpu vs 2.14.0+cpu",))


def test_a_resume_by_other_code_says_where_it_resumed_and_tells_a_changed_trajectory_from_a_lost_part(tmp_path):
    """Across versions (judge/records/versions.py): the verdict names the other environment; a trajectory the code
    moved says so, by how much, with no part blamed; a part lost at the restore is said as such."""
    passed = failing(check(CheckKind.RESUME, "resumed", passed=True), check(CheckKind.RESTORE, "resumed", passed=True))
    passed.across = ACROSS
    assert passed.verdict.line.startswith(
        "PASSED: resumed by other code (torch 2.13.0+cpu vs 2.14.0+cpu): every restore exact and every resume "
        "concordant"
    )
    moved = Diagnosis(lost=(), rule=CHANGED_CODE, step=6, evidence="history[5].loss", explanation="it moved first")
    changed = failing(resumed(moved, first_mismatch="history[5].loss", max_abs_diff=3e-8), across=ACROSS)
    assert changed.verdict.line == (
        "FAILED: resumed by other code (torch 2.13.0+cpu vs 2.14.0+cpu): resumed (from step 5) differs from continuous "
        "from update 6 (history[5].loss), by up to 3e-08; changed by the resume's code: it moved first"
    )
    assert moved.named == "none" and "lost" not in changed.verdict.line
    at_restore = check(CheckKind.RESTORE, "resumed", resumed_at=5, diagnosis=lost("scheduler", rule=AT_RESTORE))
    lost_part = failing(at_restore, resumed(None), across=ACROSS)
    assert "lost scheduler" in lost_part.verdict.line and "changed by" not in lost_part.verdict.line
    assert Verification.from_json(changed.to_json()).across == ACROSS  # written and read back
    assert "**Resumed by other code** (torch 2.13.0+cpu vs 2.14.0+cpu)" in markdown.summary(changed, REPORT)
