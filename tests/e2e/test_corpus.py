"""The diagnosis corpus, a fast slice: one case from each of five families, verified end to end and scored.

The whole corpus (every bug beside its correct control) and its counts: `python -B -m benchmarks.diagnosis`.
Each case is one verify_resume.py run (four trainer processes, a dozen with --faults all), read
and scored by the benchmark's own code, so that this test and the benchmark cannot disagree.
"""

import pytest

from benchmarks import diagnosis

pytestmark = pytest.mark.xdist_group("corpus")  # one worker: the module's runs are made once

FAST = (
    "ema/lose-ema",  # a lost part the trainer names itself, seen only in state and eval
    "optimizer_recreated/recreate-optimizer",  # short state keys (net, opt, sched); the lr differs first
    "early_nondeterminism/hash-order",  # not deterministic from update 1: no part may be blamed
    "plateau/fixed",  # a correct resume whose scheduler state holds inf (mode_worse) in both runs
    "own_parts/faults-all",  # --faults all over the trainer's own parts (meta.parts), none misnamed
)
CASES = {case.name: case for case in diagnosis.CASES}


@pytest.fixture(scope="module", params=FAST)
def verified(request, tmp_path_factory) -> tuple[diagnosis.Case, diagnosis.Result]:
    case = CASES[request.param]
    return case, diagnosis.run_case(case, tmp_path_factory.mktemp("corpus") / "run", jobs=2, timeout=300)


def test_the_fast_slice_is_five_cases_of_distinct_families():
    assert len(FAST) <= 5 and len({CASES[name].family for name in FAST}) == len(FAST)


def test_the_verifier_exits_as_the_case_expects(verified):
    case, result = verified
    # on the committed package (02dcd2c): plateau/fixed exits 1 ("non-finite value (inf vs inf)" at
    # state.sched.mode_worse) and own_parts/faults-all exits 2 (--faults all asks for rng-python, not meta.parts)
    assert result.exit == case.exit, result.reason


def test_the_diagnosis_names_the_true_cause_and_blames_nothing_else(verified):
    case, result = verified
    assert result.diagnosis != diagnosis.WRONG, f"{case.name}: true cause {case.cause}; said {result.said}"
    if not case.faults:
        assert result.diagnosis == diagnosis.RIGHT, f"{case.name}: true cause {case.cause}; said {result.said}"
        return
    # --faults all over the declared parts: every one runs, none is diagnosed as another part, and all but
    # the weights and the shuffling generator (which the summaries cannot tell from others) by their own name
    assert set(result.faults) == set(case.faults) and all(named != "-" for _, named in result.faults.values())
    named = {part for part, (mark, _) in result.faults.items() if mark == diagnosis.RIGHT}
    assert named >= set(case.faults) - {"net", "rng-shuffle"}, result.faults
