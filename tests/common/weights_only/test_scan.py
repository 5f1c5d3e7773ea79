"""The globals a pickle names, found statically (common/weights_only/scan.py, as `weights_only.pickle_globals`): what
torch's own scan finds, nothing run, and a refusal where a name cannot be resolved without running the stream."""

import collections
import io
import pickle
from pathlib import Path

import pytest
import torch

from resumeproof.common import weights_only
from tests.fuzz import zipwriter
from tests.fuzz.pickles import P
from tests.helpers import code_that_touches


def test_pickle_globals_lists_what_a_pickle_names_without_running_it(tmp_path: Path) -> None:
    marker = tmp_path / "MARKER"
    stream = pickle.dumps({"a": code_that_touches("os.system", marker), "b": collections.OrderedDict()}, protocol=2)
    assert weights_only.pickle_globals(stream) == ["posix.system", "collections.OrderedDict"]
    stack_global = pickle.dumps([code_that_touches("os.system", marker)] * 2 + [collections.OrderedDict()], protocol=4)
    assert weights_only.pickle_globals(stack_global) == ["posix.system", "collections.OrderedDict"]
    assert not marker.exists()


def test_pickle_globals_agrees_with_torchs_scan_of_torch_save_output() -> None:
    buffer = io.BytesIO()
    torch.save(
        {"p": torch.nn.Parameter(torch.ones(2)), "s": {1}, "b": b"x", "u": torch.ones(1, dtype=torch.uint16)}, buffer
    )
    data = zipwriter.read(buffer.getvalue())[1][0].data
    expected = torch._weights_only_unpickler.get_globals_in_pkl(io.BytesIO(data))
    assert set(weights_only.pickle_globals(data)) == expected


@pytest.mark.parametrize(
    "stream",
    [
        pytest.param(b"\x80\x04" + P.int(1) + P.int(2) + b"\x93.", id="stack-global-of-ints"),
        pytest.param(b"\x80\x04" + P.op("EMPTY_LIST") + P.str("os") + b"\x93.", id="stack-global-of-a-list"),
        pytest.param(b"\x80\x02\xff", id="unknown-opcode"),
    ],
)
def test_pickle_globals_refuses_what_it_cannot_resolve_statically(stream: bytes) -> None:
    with pytest.raises(weights_only.WeightsOnlyError):
        weights_only.pickle_globals(stream)
