"""A script that declares no parts gets the names of what the evidence shows, the same whichever way it is verified.

tests/trainers/evidence_amp_warmup_curriculum.py (a GradScaler, an EMA, a warmup read off the iteration counter, a
curriculum flag kept as a Python attribute; meta.parts empty), through the protocol and, unmodified, through
`--observe`: an lr that alone differs is the counter it is computed from (nanoGPT's `get_lr(iter_num)`), never the
optimizer, whose state was restored; the curriculum flag, a plain attribute in no state_dict, is named where it lives
(`model.hard`). A lost GradScaler (`scaler`) and EMA (`ema`) are named the same both ways on the trainers of
tests/trainers/evidence_undeclared_*.py (tests/e2e/test_evidence_undeclared.py).
"""

import pytest

from tests.helpers import TRAINERS, read_verification, run_verify

TRAINER = TRAINERS / "evidence_amp_warmup_curriculum.py"
PROTOCOL, OBSERVE = "protocol", "observe"
SHORT = ("--steps", "8", "--interrupt-at", "4")
IN_THE_LOOP = ("warmup-counter",)  # a bug in what the loop does, not in what it saves: in the resume alone
ATTRIBUTE = "model.hard: true in the continuous run, false after the restore: a plain attribute"
# bug -> what the failed check's diagnosis names; None: the script resumes exactly
CASES = [  # the kit-style losses of a GradScaler and an EMA, through both ways: tests/e2e/test_evidence_undeclared.py
    (PROTOCOL, "warmup-counter", ("progress",)),
    (OBSERVE, None, None),
    (OBSERVE, "warmup-counter", ("progress",)),
    (OBSERVE, "attribute", ("model.hard",)),
]


@pytest.fixture(scope="module")
def exact(tmp_path_factory):
    """The unmodified script's exact verification, whose runs a bug in the resume alone reuses."""
    return _verify(tmp_path_factory.mktemp("exact"), OBSERVE, None)


def _verify(tmp_path, how: str, bug: str | None, exact=None):
    """`exact` given: the bug goes in the resume alone (it is in the loop, not in what is saved), and the exact
    verification's continuous and interrupted runs are reused."""
    script = f"python -B {TRAINER}" + (f" --bug {bug}" if bug and exact is None else "")
    out = tmp_path / "v"
    if how == PROTOCOL:
        done = run_verify("--output", str(out), *SHORT, "--train-cmd", script)
    else:
        train = f"{script} --until {{steps}} --output {{run}}"
        resume = f"{train} --resume {{checkpoint}}" + (f" --bug {bug}" if exact is not None else "")
        watch = ("--train-cmd", train, "--resume-cmd", resume, "--checkpoint", "{run}/checkpoint.pt")
        watch += ("--reuse-runs", str(exact[2])) if exact is not None else ()
        done = run_verify("--observe", "--output", str(out), *SHORT, *watch)
    return done, read_verification(out / "verification.json"), out


@pytest.mark.xdist_group("undeclared-parts")
@pytest.mark.parametrize(("how", "bug", "lost"), CASES, ids=[f"{h}-{b or 'exact'}" for h, b, _ in CASES])
def test_what_the_evidence_shows_is_named_without_declared_parts_and_never_a_restored_part(
    tmp_path, request, how, bug, lost
):
    in_loop = how == OBSERVE and bug in IN_THE_LOOP
    if how == OBSERVE and bug is None:
        done, found, _ = request.getfixturevalue("exact")
    else:
        done, found, _ = _verify(tmp_path, how, bug, request.getfixturevalue("exact") if in_loop else None)
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
        assert ATTRIBUTE in first["explanation"], first
    if bug == "warmup-counter":
        assert "lr 0.008333333333333333 vs 0.04166666666666667" in first["explanation"], first
