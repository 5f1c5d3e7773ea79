"""Data each process maps anew (tests/trainers/per_process_data*.py): a vocabulary, a label map or a tokenizer's
merges built from a `set` of strings, whose order Python's hash seed decides in each process. The checkpoint holds the
weights and not the mapping, so a resume feeds them another encoding, though every part is restored exactly. Both
verifications fail it at its restore and name the data it is fed: the protocol trainer, which differs from itself so
that no run of it is a reference, against a second resume of the same checkpoint ended before its first step; the
unmodified script against what its interrupted process held for update k+1. The correct variants pass.
"""

import shlex
import sys

import pytest

from tests.helpers import TRAINERS, verification

UNSEEDED = "env -u PYTHONHASHSEED"  # Python's default, whatever the test runner's: a hash seed per process
PYTHON = f"{UNSEEDED} {shlex.quote(sys.executable)} -B"
SHORT = ("--steps", "6", "--interrupt-at", "3", "--jobs", "2")
PROTOCOL, SCRIPT = "protocol", "script"
CASES = [(kind, bug) for kind in (PROTOCOL, SCRIPT) for bug in (None, "vocabulary", "labels", "merges")]
FED = {"vocabulary": "batch", "labels": "target", "merges": "batch"}  # what a resume is fed another way


def verified(tmp_path_factory, kind: str, bug: str | None):
    flag = f" --bug {bug}" if bug else ""
    if kind == PROTOCOL:
        return verification(
            tmp_path_factory, kind, *SHORT, "--train-cmd", f"{PYTHON} {TRAINERS}/per_process_data.py{flag}"
        )
    train = f"{PYTHON} {TRAINERS}/per_process_data_script.py --iters {{steps}} --out {{run}}{flag}"
    watch = (
        "--train-cmd",
        train,
        "--resume-cmd",
        f"{train} --resume {{checkpoint}}",
        "--checkpoint",
        "{run}/ckpt_{step}.pt",
    )
    return verification(tmp_path_factory, kind, "--observe", *SHORT, *watch)


@pytest.mark.parametrize(("kind", "bug"), CASES, ids=[f"{k}-{b or 'correct'}" for k, b in CASES])
def test_a_mapping_each_process_builds_anew_fails_the_restore_naming_the_data(tmp_path_factory, kind, bug):
    proc, doc, _ = verified(tmp_path_factory, kind, bug)
    if bug is None:
        assert proc.returncode == 0, proc.stderr[-3000:]
        assert doc["deterministic"] is not False
        return
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert doc["deterministic"] is False  # every run maps its own way: no run is the others' reference
    restore = next(c for c in doc["checks"] if c["kind"] == "restore" and c["trajectory"] == "resumed")
    assert not restore["passed"] and restore["first_mismatch"] == FED[bug], restore
    assert restore["diagnosis"]["parts"] == ["data"], restore["diagnosis"]
    line = proc.stderr.strip().splitlines()[-1]
    assert line.startswith("FAILED: not deterministic") and line.endswith("lost data"), line
    assert f"(it differs at {FED[bug]})" in line, line
    if kind == PROTOCOL:  # held against a second resume of the checkpoint: it was fed otherwise
        assert "another resume of the same checkpoint" in restore["diagnosis"]["explanation"], restore
        assert doc["trajectories"]["restored-inputs"]["exit_code"] == 0
