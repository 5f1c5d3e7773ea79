"""What RUN holds to export (verify/export/source.py): the newest valid resume point, or every one with --all, each
checked as the verifier checks a checkpoint; a corrupt one skipped and named, never exported; the files that go
with them; and the command that resumes them, as recorded or as given."""

import json
import shutil
import sys

import pytest

from resumeproof.common import manifest, protocol
from resumeproof.common.protocol import CHECKPOINT, SUMMARY
from resumeproof.verify.export import source
from resumeproof.verify.export.source import Kind, SourceError
from tests.helpers import TRAIN

pytestmark = pytest.mark.xdist_group("export")  # the folder's fixtures (conftest.py) are made once


@pytest.fixture
def run(run_dir, tmp_path):
    """A copy of the run that a test may damage."""
    return shutil.copytree(run_dir, tmp_path / "run")


def test_the_newest_point_is_the_final_checkpoint_and_the_other_ones_are_named_not_exported(run_dir):
    src = source.read(run_dir, everything=False)
    assert src.kind is Kind.RUN
    assert [(p.path, p.step) for p in src.points] == [(CHECKPOINT, 3)]
    assert src.files == ("checkpoint.pt", "checkpoint.pt.sha256", "loss.jsonl", "summary.json")  # no lock
    assert src.notes == ("other resume points not exported (--all exports them): "
                         "step_000003.pt, step_000002.pt, step_000001.pt",)  # fmt: skip


def test_all_exports_every_valid_point_newest_first(run_dir):
    src = source.read(run_dir, everything=True)
    assert [(p.path, p.step) for p in src.points] == [
        (CHECKPOINT, 3), ("step_000003.pt", 3), ("step_000002.pt", 2), ("step_000001.pt", 1),
    ]  # fmt: skip
    assert "step_000001.pt.sha256" in src.files and ".lock" not in src.files
    assert src.points[-1].digests == {"step_000001.pt": src.points[-1].sha256}


def test_a_corrupt_newest_point_is_skipped_and_named_and_the_next_valid_one_exported(run):
    (run / CHECKPOINT).unlink()
    data = bytearray((run / "step_000003.pt").read_bytes())
    data[len(data) // 2] ^= 1
    (run / "step_000003.pt").write_bytes(bytes(data))
    src = source.read(run, everything=False)
    assert [(p.path, p.step) for p in src.points] == [("step_000002.pt", 2)]
    assert [s.path for s in src.skipped] == ["step_000003.pt"]
    assert "sha256" in src.skipped[0].reason
    assert not any(f.startswith("step_000003.pt") for f in src.files)  # a corrupt file does not travel


def test_a_directory_checkpoint_goes_whole_each_file_with_the_digest_its_sidecar_lists(run):
    (run / CHECKPOINT).unlink()
    folder = run / CHECKPOINT  # a framework's folder (a DCP save is another): plain files, listed by the sidecar
    (folder / "model").mkdir(parents=True)
    (folder / "model" / "state.json").write_text('{"w": [1.0, 2.0]}')
    (folder / "trainer.json").write_text('{"step": 3}')
    summary = json.loads((run / SUMMARY).read_text())
    summary["meta"][protocol.META_CHECKPOINT_SHA256] = manifest.write(folder)  # as the trainer records it
    (run / SUMMARY).write_text(json.dumps(summary))
    src = source.read(run, everything=False)
    point = src.points[0]
    assert (point.path, point.step, point.directory) == (CHECKPOINT, 3, True)
    assert point.digests == {f"{CHECKPOINT}/{name}": digest for name, digest in manifest.read(folder).items()}
    assert {"checkpoint.pt/model/state.json", "checkpoint.pt/trainer.json", "checkpoint.pt.sha256"} <= set(src.files)


def test_a_final_checkpoint_the_summary_does_not_describe_is_skipped_with_its_reason(run):
    summary = json.loads((run / SUMMARY).read_text())
    summary["meta"][protocol.META_CHECKPOINT_SHA256] = "0" * 64  # a process killed between checkpoint and summary
    (run / SUMMARY).write_text(json.dumps(summary))
    src = source.read(run, everything=False)
    assert src.points[0].path == "step_000003.pt"
    assert [(s.path, s.reason) for s in src.skipped] == [
        (CHECKPOINT, "its step is unknown: summary.json describes another")
    ]


@pytest.mark.parametrize("how", ["no checkpoint", "only corrupt ones", "no directory"])
def test_a_run_with_nothing_to_export_is_one_error_naming_it(run, how):
    for path in sorted(run.glob("*.pt")):
        if how == "no checkpoint":
            path.unlink()
        else:
            path.write_bytes(b"not a checkpoint")
    target = run / "absent" if how == "no directory" else run
    with pytest.raises(SourceError) as caught:
        source.read(target, everything=False)
    said = {"no checkpoint": "no checkpoint", "only corrupt ones": "no valid checkpoint", "no directory": "no such"}
    assert str(target) in str(caught.value) and said[how] in str(caught.value)


def test_the_recorded_command_drops_the_flags_the_export_passes_and_keeps_the_rest(run):
    summary = json.loads((run / SUMMARY).read_text())
    summary["meta"]["argv"] = [
        str(TRAIN), "--until-step", "9", "--output", "o", "--resume", "auto", "--seed", "3", "--omit=model",
        "--omit-rng-restore", "--checkpoint-every=2", "--pivot", "lr=0.01",
    ]  # fmt: skip
    (run / SUMMARY).write_text(json.dumps(summary))
    found = source.command(source.read(run, everything=False), None)
    assert found.argv == (sys.executable, "-B", str(TRAIN), "--seed", "3", "--pivot", "lr=0.01")
    assert found.origin == "summary.json meta.argv"


def test_a_recorded_script_not_found_asks_for_train_cmd_and_a_given_command_wins(run):
    summary = json.loads((run / SUMMARY).read_text())
    summary["meta"]["argv"] = ["gone/train.py", "--steps", "3"]
    (run / SUMMARY).write_text(json.dumps(summary))
    src = source.read(run, everything=False)
    with pytest.raises(SourceError, match=r"gone/train\.py is not found from here; pass --train-cmd"):
        source.command(src, None)
    assert source.command(src, "python -B mine.py --x 1").argv == ("python", "-B", "mine.py", "--x", "1")


def test_a_verification_exports_its_interrupted_point_with_the_continuous_run_as_reference(verification_dir):
    src = source.read(verification_dir, everything=False)
    assert src.kind is Kind.VERIFICATION
    assert [(p.path, p.step) for p in src.points] == [("interrupted/checkpoint.pt", 2)]
    assert src.reference is not None and src.reference.step == 3
    assert src.files == (
        "verification.json", "continuous/summary.json", "interrupted/checkpoint.pt", "interrupted/checkpoint.pt.sha256",
    )  # fmt: skip
    assert source.command(src, None).origin == "verification.json train_cmd"
