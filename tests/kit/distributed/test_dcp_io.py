"""DCP checkpoints on the trainer's side (kit/distributed/dcp_io.py): what a torch.distributed.checkpoint `.metadata`
may name, checked before it is unpickled allowlisted; a tampered one is refused and its payload never runs, while
stock dcp.load runs it. The verifier refuses the same files: tests/verify/run/test_accept.py."""

import warnings
from pathlib import PosixPath

import pytest
import torch
import torch.distributed.checkpoint as stock

from resumeproof.common import checkpoint_files, dcp_files, manifest
from resumeproof.common.allowances import NONE_ALLOWED
from resumeproof.kit.checkpoint import CheckpointError
from resumeproof.kit.distributed import dcp_io
from tests.helpers import DCP_TAMPERED, code_that_touches, dcp_saved, dcp_state, dcp_tampered, rewrite_metadata

# dcp.save and dcp.load in this process, without a process group, say so; that is intended here.
pytestmark = pytest.mark.filterwarnings("ignore:torch.distributed is disabled:UserWarning")

STATE = dcp_state()


def empty_like_state() -> dict:
    return {
        "model": {key: torch.empty_like(value) for key, value in STATE["model"].items()},
        "flags": torch.empty(2, dtype=torch.bool),
        "extra": torch.empty_like(STATE["extra"]),
    }


def test_every_allowlisted_name_resolves_on_the_trainer_side():
    assert set(dcp_io.ALLOWED) == dcp_files.GLOBALS
    assert dcp_io.ALLOWED["torch.float64"] is torch.float64 and dcp_io.ALLOWED["pathlib._local.PosixPath"] is PosixPath


def test_the_safe_load_reads_back_every_bit(tmp_path):
    folder = dcp_saved(tmp_path)
    state = empty_like_state()
    dcp_io.load(state, folder)
    assert all(torch.equal(state["model"][k], STATE["model"][k]) for k in STATE["model"])
    assert dcp_io.from_json_tensor(state["extra"]) == {"step": 3, "lr": 0.1 + 0.2, "pcg": 2**127 + 1}


def test_stock_dcp_load_runs_the_payload_of_a_tampered_metadata(tmp_path):
    """The hole this package closes, shown on the installed torch (2.13): plain pickle.load of `.metadata`."""
    marker = tmp_path / "ran"
    folder = dcp_saved(tmp_path)
    rewrite_metadata(folder, lambda m: m.storage_meta.modules.append(code_that_touches("exec", marker)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stock.load(empty_like_state(), checkpoint_id=folder, no_dist=True)
    assert marker.exists()


@pytest.mark.parametrize("how", DCP_TAMPERED)
def test_a_dcp_directory_dcp_never_writes_is_refused_by_the_trainer_and_never_runs(tmp_path, how):
    """What stock dcp.load would run or trust is refused before anything is unpickled; the verifier refuses the same
    directories (tests/verify/run/test_accept.py)."""
    folder, marker = dcp_tampered(tmp_path, how)
    with pytest.raises(CheckpointError) as refused:
        dcp_io.load(empty_like_state(), folder)
    message, (reason, _) = str(refused.value), DCP_TAMPERED[how]
    assert message.startswith(f"{folder / dcp_files.METADATA}: ") and message.endswith("; refusing to resume")
    assert reason in message and not marker.exists()


def test_a_save_without_its_metadata_is_never_used(tmp_path):
    folder = dcp_saved(tmp_path)
    (folder / dcp_files.METADATA).unlink()
    manifest.write(folder)
    with pytest.raises(CheckpointError, match=r"no \.metadata: the save did not finish"):
        dcp_io.read_metadata(folder)
    info = checkpoint_files.classify(folder / "__0_0.distcp", "__0_0.distcp", "0" * 64, NONE_ALLOWED)
    assert info.refused and info.kind == "opaque" and "the save did not finish" in checkpoint_files.refusal(info)
