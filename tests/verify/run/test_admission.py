"""The one decision on a checkpoint file or directory, behind the verifier's trajectories and `resumeproof check`:
the sidecar verified when asked (tests/verify/run/test_accept.py and tests/verify/run/test_vet.py hold the two
callers)."""

import pickle

import pytest

from resumeproof.common import fingerprint, manifest
from resumeproof.common.allowances import NONE_ALLOWED, Allowances
from resumeproof.verify.run.admission import EMPTY, admit


def copied(run, tmp_path, digest: str | None = None):
    """The run's checkpoint.pt beside a sidecar of its own, or of `digest`."""
    path = tmp_path / "checkpoint.pt"
    path.write_bytes((run / "checkpoint.pt").read_bytes())
    fingerprint.write_sidecar(path, digest or fingerprint.sha256_file(path))
    return path


def test_a_file_is_held_to_its_sidecar_only_when_asked(interrupted_run, tmp_path):
    path = copied(interrupted_run, tmp_path, "0" * 64)
    with pytest.raises(fingerprint.FingerprintError, match="does not match"):
        admit(path, NONE_ALLOWED, sidecar=True)
    found = admit(path, NONE_ALLOWED, sidecar=False)
    assert found.sha256 is None and found.tensors == 18 and found.refusal is None


def test_a_signed_file_carries_the_digest_its_sidecar_records(interrupted_run, tmp_path):
    path = copied(interrupted_run, tmp_path)
    assert admit(path, NONE_ALLOWED, sidecar=True).sha256 == fingerprint.read_sidecar(path)


def directory(tmp_path, files: dict[str, bytes]):
    folder = tmp_path / "checkpoint-3"
    folder.mkdir(parents=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return folder


def test_a_directory_without_a_sidecar_has_every_file_classified_and_an_empty_one_is_refused(tmp_path):
    found = admit(
        directory(tmp_path / "a", {"state.json": b"{}", "latest": b"checkpoint-3\n"}), NONE_ALLOWED, sidecar=False
    )
    assert found.refusal is None and found.sha256 is None and {f.kind for f in found.files} == {"json", "text"}
    assert admit(directory(tmp_path / "b", {}), NONE_ALLOWED, sidecar=False).refusal == EMPTY


def test_a_file_that_can_run_code_refuses_its_directory_unless_allowed_by_name(tmp_path):
    folder = directory(tmp_path, {"rng.pkl": pickle.dumps(print, protocol=4), "state.json": b"{}"})
    found = admit(folder, NONE_ALLOWED, sidecar=False)
    assert found.refusal is not None and found.refusal.startswith(f"{folder}/rng.pkl: a pickle that can run code")
    assert len(found.files) == 2  # every file is classified, the refused one among them
    assert admit(folder, Allowances(unsafe_pickle=("rng.pkl",)), sidecar=False).refusal is None


def test_a_signed_directory_may_hold_nothing_its_sidecar_does_not_list(tmp_path):
    folder = directory(tmp_path, {"state.json": b"{}"})
    digest = manifest.write(folder)
    assert admit(folder, NONE_ALLOWED, sidecar=True).sha256 == digest
    (folder / "stray.bin").write_bytes(b"x")
    with pytest.raises(manifest.ManifestError, match=r"stray\.bin is not listed"):
        admit(folder, NONE_ALLOWED, sidecar=True)
