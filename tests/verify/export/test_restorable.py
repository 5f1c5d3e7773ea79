"""The copy proven restorable (verify/export/restorable.py): one update resumed from the copy, by a fresh process of
the reference trainer, equals the reference update bit for bit; and the proof can fail: a reference one ulp away
differs, a copy holding another step's checkpoint or lacking its sidecar is refused, a reference that cannot be
made stops the export."""

import copy
import math
import shutil
import sys
from dataclasses import replace

import pytest

from resumeproof.common import fingerprint
from resumeproof.common.protocol import CheckKind
from resumeproof.verify.export import restorable, source
from resumeproof.verify.export.source import Command

pytestmark = pytest.mark.xdist_group("export")  # the folder's fixtures (conftest.py) are made once

POINT = "interrupted/checkpoint.pt"


@pytest.fixture
def src(verification_dir):
    return source.read(verification_dir, everything=False)


def prove(src, copied, tmp_path, command=None):
    return restorable.prove(src, command or source.command(src, None), copied, tmp_path / "work", timeout=120)


@pytest.fixture(scope="module")
def resumed(verification_dir, tmp_path_factory):
    """One update resumed from an intact copy of the verification's point (the folder itself)."""
    src = source.read(verification_dir, everything=False)
    work = tmp_path_factory.mktemp("resumed")
    return restorable.resume(src, source.command(src, None), verification_dir, work, timeout=120)


def test_one_update_from_an_intact_copy_equals_the_continuous_runs_next_update(src, resumed):
    check = restorable.judge(src, resumed)
    assert check.kind is CheckKind.RESTORABLE and check.path == POINT
    assert check.passed, check.detail
    assert check.detail == "update 3 identical"
    assert resumed.from_run is None  # the continuous run holds the reference: no second process


def test_a_reference_one_ulp_away_is_a_difference(src, resumed):
    reference = copy.deepcopy(src.reference)
    record = reference.history[2]
    record["loss"] = math.nextafter(record["loss"], math.inf)
    check = restorable.judge(replace(src, reference=reference), resumed)
    assert not check.passed
    assert check.detail is not None and check.detail.startswith("update 3 differs: 1 mismatch, first history[2].loss (")


@pytest.mark.parametrize("damage", ["another step", "no sidecar"])
def test_a_copy_with_a_changed_or_missing_file_is_refused(src, run_dir, verification_dir, tmp_path, damage):
    copied = shutil.copytree(verification_dir, tmp_path / "copy")
    if damage == "another step":  # a consistent checkpoint and sidecar, of step 1 instead of 2
        checkpoint = copied / POINT
        shutil.copyfile(run_dir / "step_000001.pt", checkpoint)
        fingerprint.write_sidecar(checkpoint, fingerprint.sha256_file(checkpoint))
    else:
        (copied / f"{POINT}.sha256").unlink()
    check = prove(src, copied, tmp_path)
    assert not check.passed
    said = "step is 2, expected 3" if damage == "another step" else "checkpoint.pt.sha256 is missing"
    assert check.detail is not None and check.detail.startswith("the copy was refused") and said in check.detail


def test_a_reference_that_cannot_be_made_stops_the_proof(run_dir, tmp_path):
    src = source.read(run_dir, everything=False)
    failing = Command(argv=(sys.executable, "-c", "raise SystemExit('no such trainer')"), origin="--train-cmd")
    with pytest.raises(restorable.ReferenceFailed, match="from-run: exited with status 1: no such trainer"):
        prove(src, run_dir, tmp_path, failing)
