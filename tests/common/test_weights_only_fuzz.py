"""The differential fuzz slice: seeded cases judged by the torch-free check and by torch in worker processes.

The full run (100,000 cases and more) is benchmarks/fuzz_weights_only.py; docs/weights-only.md has its figures.
"""

import os
import subprocess
import sys
import time

from tests.fuzz import run
from tests.helpers import REPO

TESTS = REPO / "tests"

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


GENERATE = """
import hashlib, sys
from pathlib import Path
from tests.fuzz import cases
order = range(40) if sys.argv[2] == "forward" else reversed(range(40))
digests = {i: hashlib.sha256(cases.make(20261129, i, Path(sys.argv[1])).path.read_bytes()).hexdigest() for i in order}
print(sorted(digests.items()))
"""


def test_a_case_is_the_same_bytes_in_every_process_whatever_came_before(tmp_path) -> None:
    """A failing case number can be generated again to be debugged (payloads name their marker's path)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join((str(TESTS), str(REPO))), "PYTHONHASHSEED": "0"}
    printed = [
        subprocess.run(
            [sys.executable, "-B", "-c", GENERATE, str(tmp_path), order], env=env, capture_output=True, text=True
        )
        for order in ("forward", "backward")
    ]
    assert printed[0].returncode == 0, printed[0].stderr
    assert printed[0].stdout == printed[1].stdout
