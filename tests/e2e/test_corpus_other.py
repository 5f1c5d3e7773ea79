"""The other diagnosis corpus (trainers in users' styles, tests/trainers/corpus_other/), a fast slice: four cases that
break the rules most differently, verified end to end and scored by the benchmark's own code.

The whole corpus and its counts: `python -B -m benchmarks.diagnosis --corpus other`.
"""

import pytest

from benchmarks import diagnosis
from tests.agreements import contradictions
from tests.helpers import read_verification

FAST = (
    "amp_scaler/scaler-not-saved",  # a self-correcting GradScaler: its end state equals the continuous run's
    "iterator_after_restore/iter-after-restore",  # the generator is restored, then the iterator draws from it
    "accelerate_ema/ema-not-registered",  # a framework's directory checkpoint, its pickle allowed by name
    "plateau_accuracy/fresh-scheduler",  # self-correcting counters; an evaluation forward pass after every update
)
CASES = {case.name: case for case in diagnosis.OTHER_CASES}


# Each case's tests on one worker, so that its verification is made once; the cases spread over both workers.
@pytest.fixture(
    scope="module",
    params=[pytest.param(name, marks=pytest.mark.xdist_group(f"corpus-other:{name}")) for name in FAST],
)
def verified(request, tmp_path_factory) -> tuple[diagnosis.Case, diagnosis.Result, dict]:
    """The case, its score, and its verification.json (checked against the schema)."""
    case, out = CASES[request.param], tmp_path_factory.mktemp("corpus-other") / "run"
    result = diagnosis.run_case(case, out, jobs=2, timeout=300)
    return case, result, read_verification(out / "verification.json")


def test_the_fast_slice_is_four_cases_of_distinct_families():
    assert len(FAST) <= 4 and len({CASES[name].family for name in FAST}) == len(FAST)


def test_the_verifier_exits_as_the_case_expects(verified):
    case, result, _ = verified
    assert result.exit == case.exit, result.reason


def test_the_diagnosis_names_the_true_cause(verified):
    case, result, _ = verified
    assert result.diagnosis == diagnosis.RIGHT, f"{case.name}: true cause {case.cause}; said {result.said}"


def test_the_document_never_contradicts_itself(verified):
    _, _, doc = verified
    assert contradictions(doc) == []
