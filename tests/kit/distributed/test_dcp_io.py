"""DCP checkpoints: what a torch.distributed.checkpoint `.metadata` may name, checked by the trainer and the
verifier alike; a tampered one is refused by both and its payload never runs (while stock dcp_io.load runs it)."""

import warnings
from pathlib import Path, PosixPath

import pytest
import torch
import torch.distributed.checkpoint as stock
from torch.distributed.checkpoint import FileSystemWriter

from resumeproof.common import checkpoint_files, dcp_check, dcp_files, manifest, weights_only
from resumeproof.common.allowances import NONE_ALLOWED
from resumeproof.kit.checkpoint import CheckpointError
from resumeproof.kit.distributed import dcp_io
from resumeproof.verify import accept
from resumeproof.verify.trajectories import TrajectoryError
from tests.helpers import code_that_touches, rewrite_metadata

# dcp.save and dcp.load in this process, without a process group, say so; that is intended here.
pytestmark = pytest.mark.filterwarnings("ignore:torch.distributed is disabled:UserWarning")

STATE = {
    "model": {"w": torch.arange(6.0).reshape(2, 3), "n": torch.arange(4), "half": torch.ones(3, dtype=torch.bfloat16)},
    "flags": torch.tensor([True, False]),
    "extra": dcp_io.json_tensor({"step": 3, "lr": 0.1 + 0.2, "pcg": 2**127 + 1}),
}


def saved(tmp_path: Path, state: dict | None = None) -> Path:
    """A DCP directory written by stock dcp.save in this process, with the protocol's sidecar."""
    folder = tmp_path / "checkpoint.pt"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "torch.distributed is ... uninitialized, assuming ... a single process"
        stock.save(state or STATE, storage_writer=FileSystemWriter(folder))
    manifest.write(folder)
    return folder


def empty_like_state() -> dict:
    return {
        "model": {key: torch.empty_like(value) for key, value in STATE["model"].items()},
        "flags": torch.empty(2, dtype=torch.bool),
        "extra": torch.empty_like(STATE["extra"]),
    }


def test_the_allowlisted_dtypes_are_exactly_torchs():
    found = {str(v).removeprefix("torch.") for v in vars(torch).values() if isinstance(v, torch.dtype)}
    assert set(dcp_files.DTYPES) == found


def test_every_allowlisted_name_resolves_on_the_trainer_side():
    assert set(dcp_io.ALLOWED) == dcp_files.GLOBALS
    assert dcp_io.ALLOWED["torch.float64"] is torch.float64 and dcp_io.ALLOWED["pathlib._local.PosixPath"] is PosixPath


def test_a_dcp_save_names_only_allowlisted_globals_and_every_file_is_safe(tmp_path):
    folder = saved(tmp_path)
    assert set(weights_only.pickle_globals((folder / dcp_files.METADATA).read_bytes())) <= dcp_files.GLOBALS
    info = accept.checkpoint(folder)
    assert {f.path: f.kind for f in info.files} == {".metadata": "dcp-metadata", "__0_0.distcp": "dcp-data"}
    assert info.tensors == 5


def test_the_safe_load_reads_back_every_bit(tmp_path):
    folder = saved(tmp_path)
    state = empty_like_state()
    dcp_io.load(state, folder)
    assert all(torch.equal(state["model"][k], STATE["model"][k]) for k in STATE["model"])
    assert dcp_io.from_json_tensor(state["extra"]) == {"step": 3, "lr": 0.1 + 0.2, "pcg": 2**127 + 1}


def test_stock_dcp_load_runs_the_payload_of_a_tampered_metadata(tmp_path):
    """The hole this package closes, shown on the installed torch (2.13): plain pickle.load of `.metadata`."""
    marker = tmp_path / "ran"
    folder = saved(tmp_path)
    rewrite_metadata(folder, lambda m: m.storage_meta.modules.append(code_that_touches("exec", marker)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stock.load(empty_like_state(), checkpoint_id=folder, no_dist=True)
    assert marker.exists()


@pytest.mark.parametrize(("how", "global_"), [("os.system", "posix.system"), ("exec", "builtins.exec")])
def test_a_tampered_metadata_is_refused_by_the_trainer_and_the_verifier_and_never_runs(tmp_path, how, global_):
    marker = tmp_path / "ran"
    folder = saved(tmp_path)
    rewrite_metadata(folder, lambda m: m.storage_meta.modules.append(code_that_touches(how, marker)))
    with pytest.raises(CheckpointError, match=rf"\.metadata: names {global_}, outside the DCP allowlist"):
        dcp_io.load(empty_like_state(), folder)
    with pytest.raises(TrajectoryError) as refused:
        accept.checkpoint(folder)
    assert global_ in str(refused.value) and "--allow-unsafe-pickle '.metadata'" in str(refused.value)
    assert not marker.exists()


def test_non_tensor_items_are_refused_as_stock_dcp_would_load_them_with_weights_only_false(tmp_path):
    folder = saved(tmp_path, {"w": torch.zeros(2), "step": 3})
    with pytest.raises(CheckpointError, match="non-tensor items"):
        dcp_io.read_metadata(folder)
    with pytest.raises(TrajectoryError, match="non-tensor items"):
        accept.checkpoint(folder)


def test_a_storage_entry_naming_a_file_outside_the_folder_is_refused(tmp_path):
    folder = saved(tmp_path)

    def escape(metadata) -> None:
        info = next(iter(metadata.storage_data.values()))
        info.relative_path = "../elsewhere.distcp"

    rewrite_metadata(folder, escape)
    with pytest.raises(CheckpointError, match=r"is not a __R_N\.distcp name"):
        dcp_io.read_metadata(folder)
    with pytest.raises(TrajectoryError, match=r"is not a __R_N\.distcp name"):
        accept.checkpoint(folder)


def test_bytes_that_no_item_describes_are_refused(tmp_path):
    folder = saved(tmp_path)
    with open(folder / "__0_0.distcp", "ab") as f:
        f.write(b"hidden")
    manifest.write(folder)
    with pytest.raises(TrajectoryError, match="items end at byte"):
        accept.checkpoint(folder)


def test_a_save_without_its_metadata_is_never_used(tmp_path):
    folder = saved(tmp_path)
    (folder / dcp_files.METADATA).unlink()
    manifest.write(folder)
    with pytest.raises(CheckpointError, match=r"no \.metadata: the save did not finish"):
        dcp_io.read_metadata(folder)
    info = checkpoint_files.classify(folder / "__0_0.distcp", "__0_0.distcp", "0" * 64, NONE_ALLOWED)
    assert info.refused and info.kind == "opaque" and "the save did not finish" in checkpoint_files.refusal(info)


def test_a_structure_dcp_never_writes_is_refused(tmp_path):
    folder = saved(tmp_path)
    rewrite_metadata(folder, lambda m: setattr(m, "state_dict_metadata", ["not", "a", "dict"]))
    with pytest.raises(dcp_check.DcpError, match="state_dict_metadata is not a dict"):
        dcp_check.read(folder)


def test_with_torch_load_every_item_of_a_dcp_directory_is_loaded_by_torch_too(tmp_path):
    info = accept.with_torch(accept.checkpoint(saved(tmp_path)))
    assert info.checked_by == (accept.TORCH_FREE, accept.TORCH_LOAD)
