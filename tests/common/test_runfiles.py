"""A run directory's file names (common/runfiles.py): what it may hold, and its generations newest first."""

from resumeproof.common import runfiles


def test_a_run_directory_holds_its_own_files_generations_their_sidecars_and_temporaries_only():
    own = ("checkpoint.pt", "checkpoint.pt.sha256", "summary.json", "loss.jsonl", ".lock")
    for name in (*own, "step_000012.pt", "step_000012.pt.sha256", ".step_000012.pt.tmp-4242"):
        assert runfiles.is_run_file(name), name
    for name in ("notes.txt", "step_12.pt", "step_000012.pt.bak", "checkpoint.pt.tmp-1", ".step_000012.pt.tmp-"):
        assert not runfiles.is_run_file(name), name


def test_generations_are_listed_newest_first_by_their_step_not_their_name(tmp_path):
    for step in (2, 10, 1):
        runfiles.generation(tmp_path, step).write_bytes(b"")
    (tmp_path / "step_000003.pt.sha256").write_text("")  # a sidecar is no generation
    assert runfiles.generations(tmp_path) == [
        (10, tmp_path / "step_000010.pt"),
        (2, tmp_path / "step_000002.pt"),
        (1, tmp_path / "step_000001.pt"),
    ]
