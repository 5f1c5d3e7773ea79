"""A directory checkpoint's sidecar: every file listed with its sha256, in sha256sum format, and any change refused."""

import hashlib

import pytest

from resumeproof.common import manifest


def folder_with(tmp_path, files: dict[str, bytes]):
    folder = tmp_path / "checkpoint.pt"
    for name, data in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    return folder


def test_manifest_lists_every_file_and_refuses_any_change(tmp_path):
    folder = folder_with(tmp_path, {"a.json": b"{}", "sub/b.txt": b"hello\n"})
    digest = manifest.write(folder)
    assert manifest.verify(folder)[0] == digest
    assert (tmp_path / "checkpoint.pt.sha256").read_text() == (
        f"{hashlib.sha256(b'{}').hexdigest()}  checkpoint.pt/a.json\n"
        f"{hashlib.sha256(b'hello' + bytes([10])).hexdigest()}  checkpoint.pt/sub/b.txt\n"
    )
    (folder / "sub" / "b.txt").write_bytes(b"hellO\n")
    with pytest.raises(manifest.ManifestError, match=r"sub/b\.txt: sha256"):
        manifest.verify(folder)
    (folder / "sub" / "b.txt").unlink()
    with pytest.raises(manifest.ManifestError, match=r"sub/b\.txt is missing"):
        manifest.verify(folder)


@pytest.mark.parametrize(
    "line",
    ["0" * 64 + "  checkpoint.pt/../escape", "0" * 64 + "  other/a.json", "0" * 63 + "  checkpoint.pt/a.json", "x"],
)
def test_a_sidecar_line_out_of_form_is_refused(tmp_path, line):
    folder = folder_with(tmp_path, {"a.json": b"{}"})
    (tmp_path / "checkpoint.pt.sha256").write_text(line + "\n")
    with pytest.raises(manifest.ManifestError, match="line 1"):
        manifest.verify(folder)
