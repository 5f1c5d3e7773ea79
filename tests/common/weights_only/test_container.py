"""The zip container (common/weights_only/container.py): a file that is not a torch zip archive is refused before
anything in it is read. Archives torch reads otherwise: the differential tests of tests/common/test_weights_only.py."""

import pickle
from pathlib import Path

import pytest

from resumeproof.common import weights_only


@pytest.mark.parametrize(
    "content",
    [
        pytest.param(b"", id="empty"),
        pytest.param(b"not a zip archive\n", id="text"),
        pytest.param(pickle.dumps({"w": [1.0]}, protocol=2), id="bare-pickle"),
        pytest.param(b"PK\x05\x06" + bytes(200), id="zeros-after-a-signature"),
    ],
)
def test_file_that_is_not_a_zip_archive_is_refused(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "checkpoint.pt"
    path.write_bytes(content)
    with pytest.raises(weights_only.WeightsOnlyError, match="not a torch zip archive") as caught:
        weights_only.check(path)
    assert str(caught.value).startswith(f"{path}: ")
