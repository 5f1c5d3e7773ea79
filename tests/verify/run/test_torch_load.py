"""--torch-load (verify/run/torch_load.py): torch.load(weights_only=True) itself as a second authority, every
exception it raises a one-line refusal, and every item of a DCP directory loaded by torch too (through
accept.with_torch)."""

from pathlib import Path

import pytest
import torch

from resumeproof.common import weights_only
from resumeproof.verify.run import accept, torch_load
from tests.fuzz.pickles import P
from tests.helpers import code_that_touches, dcp_saved, rewrite_records

WEIGHTS = {"w": torch.ones(3, dtype=torch.float64)}


def test_check_with_torch_accepts_the_trainer_checkpoint(interrupted_run: Path) -> None:
    torch_load.check_with_torch(interrupted_run / "checkpoint.pt")  # raises on refusal


def test_check_with_torch_refuses_code_unexecuted_with_one_line(tmp_path: Path) -> None:
    marker, path = tmp_path / "MARKER", tmp_path / "checkpoint.pt"
    torch.save({"model": code_that_touches("os.system", marker)}, path)
    with pytest.raises(weights_only.WeightsOnlyError, match=r"torch.load\(weights_only=True\) refused it") as caught:
        torch_load.check_with_torch(path)
    assert str(path) in str(caught.value) and "\n" not in str(caught.value)
    assert not marker.exists()


PID = P.mark() + P.str("storage") + P.global_("torch", "DoubleStorage") + P.str("0") + P.str("cpu") + P.int(3)


REBUILD = P.global_("torch._utils", "_rebuild_tensor_v2") + P.mark() + PID + P.op("TUPLE") + P.op("BINPERSID")


@pytest.mark.parametrize(
    "data_pkl",
    [
        pytest.param(P.proto() + P.op("APPEND") + P.op("STOP"), id="stack-underflow-IndexError"),
        pytest.param(P.proto() + P.op("BININT") + b"\x01\x00", id="opcode-cut-short-struct-error"),
        pytest.param(P.proto() + P.get(7) + P.op("STOP"), id="memo-read-before-put-KeyError"),
        pytest.param(P.proto() + P.int(5) + P.op("BINPERSID") + P.op("STOP"), id="int-persistent-id-AssertionError"),
        pytest.param(
            P.proto() + REBUILD + P.int(0) + P.op("TUPLE") + P.op("REDUCE") + P.op("STOP"),
            id="rebuild-with-2-arguments-TypeError",
        ),
        pytest.param(
            P.proto() + P.global_("torch", "float32") + P.op("EMPTY_TUPLE") + P.op("REDUCE") + P.op("STOP"),
            id="calling-a-dtype",
        ),
    ],
)
def test_check_with_torch_turns_every_exception_into_a_refusal(tmp_path: Path, data_pkl: bytes) -> None:
    original, path = tmp_path / "archive.pt", tmp_path / "malformed.pt"
    torch.save(WEIGHTS, original)
    rewrite_records(original, path, {"data.pkl": lambda data: data_pkl})
    with pytest.raises(weights_only.WeightsOnlyError) as by_torch:
        torch_load.check_with_torch(path)
    with pytest.raises(weights_only.WeightsOnlyError) as by_check:
        weights_only.check(path)
    for caught in (by_torch, by_check):
        assert str(caught.value).startswith(f"{path}: ") and "\n" not in str(caught.value)


def test_with_torch_load_every_item_of_a_dcp_directory_is_loaded_by_torch_too(tmp_path):
    info = accept.with_torch(accept.checkpoint(dcp_saved(tmp_path)))
    assert info.checked_by == (accept.TORCH_FREE, accept.TORCH_LOAD)
