"""The diagnosis corpus, a fast slice: one case from each of five families, verified end to end and scored.

The whole corpus (every bug beside its correct control) and its counts: `python -B -m benchmarks.diagnosis`.
Each case is one verify_resume.py run (four trainer processes, a dozen with --faults all), read
and scored by the benchmark's own code, so that this test and the benchmark cannot disagree.
"""

import copy

import pytest

from benchmarks import diagnosis
from tests.agreements import contradictions
from tests.helpers import read_verification

FAST = (
    "ema/lose-ema",  # a lost part the trainer names itself, seen only in state and eval
    "optimizer_recreated/recreate-optimizer",  # short state keys (net, opt, sched); the lr differs first
    "early_nondeterminism/hash-order",  # not deterministic from update 1: no part may be blamed
    "plateau/fixed",  # a correct resume whose scheduler state holds inf (mode_worse) in both runs
    "own_parts/faults-all",  # --faults all over the trainer's own parts (meta.parts), none misnamed
)
CASES = {case.name: case for case in diagnosis.CASES}


# Each case's tests on one worker, so that its verification is made once; the cases spread over both workers.
@pytest.fixture(
    scope="module",
    params=[pytest.param(name, marks=pytest.mark.xdist_group(f"corpus:{name}")) for name in FAST],
)
def verified(request, tmp_path_factory) -> tuple[diagnosis.Case, diagnosis.Result, dict]:
    """The case, its score, and its verification.json (checked against the schema)."""
    case, out = CASES[request.param], tmp_path_factory.mktemp("corpus") / "run"
    result = diagnosis.run_case(case, out, jobs=2, timeout=300)
    return case, result, read_verification(out / "verification.json")


def test_the_fast_slice_is_five_cases_of_distinct_families():
    assert len(FAST) <= 5 and len({CASES[name].family for name in FAST}) == len(FAST)


def test_the_verifier_exits_as_the_case_expects(verified):
    case, result, _ = verified
    # on the committed package (02dcd2c): plateau/fixed exits 1 ("non-finite value (inf vs inf)" at
    # state.sched.mode_worse) and own_parts/faults-all exits 2 (--faults all asks for rng-python, not meta.parts)
    assert result.exit == case.exit, result.reason


def test_the_diagnosis_names_the_true_cause_and_blames_nothing_else(verified):
    case, result, _ = verified
    assert result.diagnosis != diagnosis.WRONG, f"{case.name}: true cause {case.cause}; said {result.said}"
    if not case.faults:
        assert result.diagnosis == diagnosis.RIGHT, f"{case.name}: true cause {case.cause}; said {result.said}"
        return
    # --faults all over the declared parts: every one runs, none is diagnosed as another part, and all but
    # the weights and the shuffling generator (which the summaries cannot tell from others) by their own name
    assert set(result.faults) == set(case.faults) and all(named != "-" for _, named in result.faults.values())
    named = {part for part, (mark, _) in result.faults.items() if mark == diagnosis.RIGHT}
    assert named >= set(case.faults) - {"net", "rng-shuffle"}, result.faults


def test_the_document_never_contradicts_itself(verified):
    """A pass, a failing resume, a trainer that differs from itself, an infinity in bookkeeping, a fault matrix: every
    pair of fields that must agree does (tests/agreements.py)."""
    case, _, doc = verified
    assert contradictions(doc, faults_all="all" in case.verify) == []


def _flip_deterministic(doc: dict) -> None:
    doc["deterministic"] = {True: None, None: False, False: True}[doc["deterministic"]]


PLANTED = {  # one contradiction each, on a real document: the reading above must catch it (its negative control)
    "all_checks_passed": lambda doc: doc.update(all_checks_passed=not doc["all_checks_passed"]),
    "positive": lambda doc: doc.update(positive=not doc["positive"]),
    "negative_divergence_detected": lambda doc: doc.update(
        negative_divergence_detected=not doc["negative_divergence_detected"]
    ),
    "deterministic": _flip_deterministic,
    "blind_to": lambda doc: doc["blind_to"].append("model"),
    "determinism.repeated": lambda doc: doc["determinism"].update(repeated=not doc["determinism"]["repeated"]),
    "a check's passed": lambda doc: doc["checks"][-1].update(passed=not doc["checks"][-1]["passed"]),
}


@pytest.mark.parametrize("field", PLANTED)
def test_a_contradiction_planted_in_the_document_is_caught(verified, field):
    _, _, doc = verified
    planted = copy.deepcopy(doc)
    PLANTED[field](planted)
    assert contradictions(planted) != []
