"""A script that declares no parts gets the names of what the evidence shows, the same whichever way it is verified.

tests/trainers/evidence_amp_warmup_curriculum.py (a GradScaler, an EMA, a warmup read off the iteration counter, a
curriculum flag kept as a Python attribute; meta.parts empty), through the protocol and, unmodified, through
`--observe`: an lr that alone differs is the counter it is computed from (nanoGPT's `get_lr(iter_num)`), never the
optimizer, whose state was restored; another loss from the same parameters, batch and generators blames no part and
says what it can be. A lost GradScaler (`scaler`) and EMA (`ema`) are named the same both ways on the trainers of
tests/trainers/evidence_undeclared_*.py (tests/e2e/test_evidence_undeclared.py).
"""

import pytest

from tests.helpers import TRAINERS, read_verification, run_verify

TRAINER = TRAINERS / "evidence_amp_warmup_curriculum.py"
PROTOCOL, OBSERVE = "protocol", "observe"
SHORT = ("--steps", "8", "--interrupt-at", "4")
OUTSIDE = "state outside the state_dict (a Python attribute, a non-persistent buffer)"
# bug -> what the failed check's diagnosis names; None: the script resumes exactly
CASES = [  # the kit-style losses of a GradScaler and an EMA, through both ways: tests/e2e/test_evidence_undeclared.py
    (PROTOCOL, "warmup-counter", ("progress",)),
    (OBSERVE, None, None),
    (OBSERVE, "warmup-counter", ("progress",)),
    (OBSERVE, "attribute", ()),
]


def _verify(tmp_path, how: str, bug: str | None):
    script = f"python -B {TRAINER}" + (f" --bug {bug}" if bug else "")
    out = tmp_path / "v"
    if how == PROTOCOL:
        done = run_verify("--output", str(out), *SHORT, "--train-cmd", script)
    else:
        train = f"{script} --until {{steps}} --output {{run}}"
        resume = ("--resume-cmd", f"{train} --resume {{checkpoint}}", "--checkpoint", "{run}/checkpoint.pt")
        done = run_verify("--observe", "--output", str(out), *SHORT, "--train-cmd", train, *resume)
    return done, read_verification(out / "verification.json")


@pytest.mark.parametrize(("how", "bug", "lost"), CASES, ids=[f"{h}-{b or 'exact'}" for h, b, _ in CASES])
def test_what_the_evidence_shows_is_named_without_declared_parts_and_never_a_restored_part(tmp_path, how, bug, lost):
    done, found = _verify(tmp_path, how, bug)
    if lost is None:
        assert done.returncode == 0, done.stderr[-2000:]
        return
    assert done.returncode == 1, done.stderr[-2000:]
    diagnoses = [c["diagnosis"] for c in found["checks"] if not c["passed"] and c.get("diagnosis")]
    assert diagnoses, found["checks"]
    first = diagnoses[0]
    assert tuple(first["parts"]) == lost, first
    assert all(not set(d["parts"]) & {"optimizer", "model"} for d in diagnoses), diagnoses  # both were restored
    line = done.stderr.strip().splitlines()[-1]
    assert line.startswith("FAILED: ") and (f"lost {lost[0]}" if lost else "cause unknown") in line, line
    if bug == "attribute":
        assert OUTSIDE in first["explanation"], first
    if bug == "warmup-counter":
        assert "lr 0.008333333333333333 vs 0.04166666666666667" in first["explanation"], first
