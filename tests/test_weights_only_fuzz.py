"""The differential fuzz slice: seeded cases judged by the torch-free check and by torch in worker processes.

The full run (100,000 cases and more) is benchmarks/fuzz_weights_only.py; docs/weights-only.md has its figures.
"""

import time

from fuzz import run

SEED, CASES, JOBS = 20261129, 3000, 2


def test_fuzz_slice_finds_no_file_accepted_by_the_check_and_refused_by_torch() -> None:
    start = time.monotonic()
    outcomes = run.run(SEED, CASES, JOBS)
    elapsed = time.monotonic() - start
    print(f"\n{run.table_text(outcomes)}\n{run.times_text(outcomes)}\n{CASES} cases in {elapsed:.1f} s")
    cells = run.summary(outcomes)
    assert len(outcomes) == CASES
    assert cells["all"]["ours accepts, torch refuses"] == 0, [
        o for o in outcomes if run.cell(o) == "ours accepts, torch refuses"
    ]
    assert cells["all"]["our failure"] == 0, [o for o in outcomes if run.cell(o) == "our failure"]
    assert cells["all"]["marker created"] == 0
    assert cells["valid"]["ours refuses, torch accepts"] == 0  # no false alarm on torch.save of allowed content
    assert cells["valid"]["both accept"] > CASES // 5
    assert elapsed < 60
