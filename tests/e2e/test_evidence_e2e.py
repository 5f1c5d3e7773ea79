"""End to end, the evidence a failed comparison asks for and what a verification refuses to accept, on small
torch-free trainers (tests/trainers/_scalar_loop.py, about a second each): the repeat first, the probes once the
trainer is shown deterministic, in rounds within one verification; a repeat asked for up front is read; a weight
that is not finite in every run fails as not usable, blaming no part. Each document agrees with itself
(tests/agreements.py).
"""

import shlex
import sys
from pathlib import Path

from tests.agreements import contradictions
from tests.helpers import TRAINERS, read_verification, run_verify


def verify(out: Path, *args: str) -> tuple[str, int, dict]:
    proc = run_verify("--output", str(out), *args)
    return proc.stderr, proc.returncode, read_verification(out / "verification.json")


def trainer_cmd(script: str) -> str:
    return shlex.join([sys.executable, "-B", str(TRAINERS / script)])


def in_stderr(needle: str, stderr: str) -> bool:
    """`needle` in the verifier's stderr, whitespace aside (rich wraps lines when stderr is not a terminal)."""
    return "".join(needle.split()) in "".join(stderr.split())


# -- evidence in rounds: the repeat first, the probes once the trainer is shown deterministic ------------------


def test_a_lost_state_that_converges_by_itself_is_named_by_the_probe_that_reproduces_the_resume(tmp_path):
    stderr, code, doc = verify(tmp_path / "run", "--train-cmd", trainer_cmd("forgets_warmup.py"))
    assert code == 1, stderr
    assert doc["determinism"] == {**doc["determinism"], "repeated": True, "deterministic": True}
    probes = sorted(name for name in doc["trajectories"] if name.startswith("probe-"))
    # the warm-up's end state equals the continuous run's, yet it is probed: end state clears nothing
    assert probes == ["probe-model", "probe-rng-python", "probe-warmup"]
    said = doc["comparison"]["full_resume"]["diagnosis"]
    assert (said["parts"], said["rule"], said["step"]) == (["warmup"], "reproduced", 6)
    assert "diagnosis resumed: likely lost warmup from update 6: a resume with --omit=warmup reproduces" in stderr
    assert contradictions(doc) == []


def test_a_repeat_asked_for_up_front_is_read_and_required_determinism_fails_a_trainer_that_differs_from_itself(
    tmp_path,
):
    args = ("--repeat", "--require-deterministic", "--train-cmd", trainer_cmd("unseeded_late.py"))
    stderr, code, doc = verify(tmp_path / "run", *args)
    assert code == 1, stderr
    assert (doc["deterministic"], doc["determinism"]["first_step"]) == (False, 6)
    assert doc["determinism"]["spread"] is None and "continuous-repeat-2" not in doc["trajectories"]
    assert [name for name in doc["trajectories"] if name.startswith("probe-")] == []  # nothing is probed
    assert all(not c["diagnosis"]["parts"] for c in doc["checks"] if c["diagnosis"] and not c["passed"])
    assert stderr.strip().splitlines()[-1].startswith("NOT DETERMINISTIC: the continuous run and a repeat")
    assert contradictions(doc) == []


# -- a number that is not finite where an output is read ------------------------------------------------------


def test_a_weight_that_is_not_finite_in_every_run_is_not_a_usable_output_and_no_part_is_blamed(tmp_path):
    stderr, code, doc = verify(tmp_path / "run", "--train-cmd", trainer_cmd("infinite_weight.py"))
    assert code == 1, stderr
    assert doc["positive"] is True and doc["comparison"]["full_resume"]["verdict"] == "concordant"  # resumes exactly
    [failed] = [c for c in doc["checks"] if not c["passed"]]
    assert (failed["kind"], failed["trajectory"]) == ("finite", "continuous")
    assert failed["first_mismatch"] == "state.model.w[1]"
    assert failed["diagnosis"] is None and doc["nonfinite"] == []  # failed, never matched and accepted
    assert "continuous-repeat" not in doc["trajectories"]  # no difference: no evidence is asked for
    line = "continuous: non-finite value in the model's state at state.model.w[1] (-inf): not a usable output"
    assert in_stderr(line, stderr)
    assert contradictions(doc) == []
