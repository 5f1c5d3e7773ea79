"""resumeproof.plaindata: a torch-free check that must refuse whatever `torch.load(weights_only=True)` refuses.

It may also refuse some files torch would load (a conservative refusal costs a verification, not a
safety hole), and the corpus below says which items fall on that side, so that the list of such
refusals is written down and any change to it is noticed.
"""

import collections
import os
import pickle
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from conftest import REPO, code_that_touches
from resumeproof.verify import weights_only as plaindata

# (torch.load accepts, plaindata.check accepts)
BOTH_ACCEPT = (True, True)
CONSERVATIVE = (True, False)  # plaindata refuses what torch loads: allowed, and listed here on purpose
BOTH_REFUSE = (False, False)


# -- building corpus items: each writes one file at `path` ---------------------------------------

Build = Callable[[Path, pytest.FixtureRequest], None]


def saved(obj: Any, **kwargs: Any) -> Build:
    return lambda path, request: torch.save(obj, path, **kwargs)


def trainer_checkpoint(path: Path, request: pytest.FixtureRequest) -> None:
    shutil.copyfile(request.getfixturevalue("interrupted_run") / "checkpoint.pt", path)


class Custom:
    """An ordinary user class: weights_only refuses to construct it."""

    def __init__(self) -> None:
        self.weight = 1.0


def runs_code(how: str) -> Build:
    return lambda path, request: torch.save({"w": code_that_touches(how, path.with_name("MARKER"))}, path)


class RawTensor:
    """Pickles as `_rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks)` with any arguments,
    as a hand-made file could."""

    def __init__(self, tensor: torch.Tensor, offset: Any, size: Any, stride: Any, requires_grad: Any = False) -> None:
        storage = torch.storage.TypedStorage(wrap_storage=tensor.untyped_storage(), dtype=tensor.dtype, _internal=True)
        self.args = (storage, offset, size, stride, requires_grad, collections.OrderedDict())

    def __reduce__(self) -> tuple[Any, ...]:
        return torch._utils._rebuild_tensor_v2, self.args


def rewrite_records(src: Path, dst: Path, change: dict[str, Callable[[bytes], bytes | None]]) -> None:
    """Copy a torch zip archive, passing the records named in `change` (relative to the archive's top folder)
    through their function: new bytes, or None to drop the record."""
    with zipfile.ZipFile(src) as old, zipfile.ZipFile(dst, "w") as new:
        records = {info.filename.split("/", 1)[1]: info for info in old.infolist()}
        assert set(change) <= set(records), sorted(records)
        for record, info in records.items():
            data = change.get(record, lambda data: data)(old.read(info))
            if data is not None:
                new.writestr(info, data)


def edited(obj: Any, change: dict[str, Callable[[bytes], bytes | None]]) -> Build:
    def build(path: Path, request: pytest.FixtureRequest) -> None:
        original = path.with_name("original.pt")
        torch.save(obj, original)
        rewrite_records(original, path, change)
        original.unlink()

    return build


def tensor_count(value: Any) -> int:
    if isinstance(value, torch.Tensor):
        return 1
    if isinstance(value, dict):
        return sum(tensor_count(item) for item in value.values())
    if isinstance(value, list | tuple):
        return sum(tensor_count(item) for item in value)
    return 0


BASE = torch.arange(12, dtype=torch.float64).reshape(3, 4)
INTS = torch.arange(6, dtype=torch.int64)
FLOATS = torch.arange(6, dtype=torch.float64)
WEIGHTS = {"w": torch.ones(3, dtype=torch.float64)}
FIVE_DTYPES = (torch.float64, torch.float32, torch.int64, torch.uint8, torch.bool)

CORPUS = [
    pytest.param(trainer_checkpoint, BOTH_ACCEPT, id="trainer-checkpoint"),
    pytest.param(
        saved({str(dtype): torch.ones(3, dtype=dtype) for dtype in FIVE_DTYPES}),
        BOTH_ACCEPT,
        id="tensors-of-five-dtypes",
    ),
    pytest.param(
        saved([torch.ones(2, dtype=t) for t in (torch.float16, torch.bfloat16, torch.int8, torch.int16, torch.int32)]),
        BOTH_ACCEPT,
        id="tensors-of-more-legacy-storage-dtypes",
    ),
    pytest.param(
        saved([torch.ones(2, dtype=torch.complex64), torch.ones(2, dtype=torch.complex128)]),
        BOTH_ACCEPT,
        id="complex-tensors",
    ),
    pytest.param(
        saved({"base": BASE, "slice": BASE[1:, 2:], "transposed": BASE.t(), "strided": BASE[:, ::2], "row": BASE[2]}),
        BOTH_ACCEPT,
        id="views-slices-and-non-contiguous-tensors",
    ),
    pytest.param(
        saved([torch.empty(0), torch.empty(2, 0, 3), BASE[3:], torch.tensor(1.5)]), BOTH_ACCEPT, id="empty-and-0-d"
    ),
    pytest.param(saved({"p": torch.nn.Parameter(torch.ones(3))}), BOTH_ACCEPT, id="parameter"),
    pytest.param(saved(torch.nn.Parameter(torch.ones(3), requires_grad=False)), BOTH_ACCEPT, id="frozen-parameter"),
    pytest.param(saved(torch.ones(2, requires_grad=True)), BOTH_ACCEPT, id="tensor-requiring-grad"),
    pytest.param(saved(torch.nn.Linear(3, 2).state_dict()), BOTH_ACCEPT, id="ordered-dict-state-dict"),
    pytest.param(
        saved([1, -(2**70), 2.5, float("inf"), "text", None, True, (1, (2, [3])), {"k": [False, {}]}, [], ()]),
        BOTH_ACCEPT,
        id="nested-plain-values",
    ),
    pytest.param(saved(WEIGHTS, pickle_protocol=3), BOTH_ACCEPT, id="pickle-protocol-3"),
    # What torch loads but plaindata's smaller allowlist refuses.
    pytest.param(saved({1, 2}), CONSERVATIVE, id="set"),
    pytest.param(saved(b"bytes"), CONSERVATIVE, id="bytes"),
    pytest.param(saved(1 + 2j), CONSERVATIVE, id="complex-number"),
    pytest.param(saved(collections.Counter(a=1)), CONSERVATIVE, id="counter"),
    pytest.param(saved(torch.float64), CONSERVATIVE, id="dtype"),
    pytest.param(saved(torch.Size([2, 3])), CONSERVATIVE, id="torch-size"),
    pytest.param(saved(torch.device("cpu")), CONSERVATIVE, id="torch-device"),
    pytest.param(saved(torch.ones(2, dtype=torch.uint16)), CONSERVATIVE, id="uint16-tensor-rebuild-v3"),
    pytest.param(saved(torch.ones(2).untyped_storage()), CONSERVATIVE, id="untyped-storage"),
    pytest.param(saved(WEIGHTS, _use_new_zipfile_serialization=False), CONSERVATIVE, id="legacy-non-zip-format"),
    # What weights_only refuses: plaindata must refuse it too.
    pytest.param(saved({"a": np.arange(3)}), BOTH_REFUSE, id="numpy-array"),
    pytest.param(saved(np.float64(1.0)), BOTH_REFUSE, id="numpy-scalar"),
    pytest.param(saved({"c": Custom()}), BOTH_REFUSE, id="custom-class-instance"),
    pytest.param(runs_code("os.system"), BOTH_REFUSE, id="os-system-reduce"),
    pytest.param(runs_code("builtins.exec"), BOTH_REFUSE, id="builtins-exec-reduce"),
    pytest.param(saved({"f": os.path.join}), BOTH_REFUSE, id="function-reference"),
    pytest.param(saved(RawTensor(FLOATS, 0, (7,), (1,))), BOTH_REFUSE, id="tensor-past-its-storage"),
    pytest.param(saved(RawTensor(FLOATS, 0, (2, 3), (1,))), BOTH_REFUSE, id="sizes-and-strides-of-unequal-length"),
    # ... including opcodes, geometry and records that the stdlib unpickler alone would let through.
    pytest.param(
        saved(WEIGHTS, pickle_protocol=4),
        BOTH_REFUSE,
        id="pickle-protocol-4",
    ),
    pytest.param(
        edited(WEIGHTS, {"data.pkl": lambda data: pickle.dumps({"a": [1, 2.0]}, protocol=0)}),
        BOTH_REFUSE,
        id="pickle-protocol-0",
    ),
    pytest.param(
        saved(RawTensor(FLOATS, 5, (6,), (-1,))),
        BOTH_REFUSE,
        id="negative-stride",
    ),
    pytest.param(
        saved(RawTensor(FLOATS, 0, (-1,), (1,))),
        BOTH_REFUSE,
        id="negative-size",
    ),
    pytest.param(
        saved(RawTensor(FLOATS, 0.0, (6,), (1,))),
        BOTH_REFUSE,
        id="float-offset",
    ),
    pytest.param(
        saved(RawTensor(INTS, 0, (6,), (1,), requires_grad=True)),
        BOTH_REFUSE,
        id="int-tensor-requiring-grad",
    ),
    pytest.param(
        edited(WEIGHTS, {"version": lambda data: None}),
        BOTH_REFUSE,
        id="archive-without-version-record",
    ),
]


@pytest.mark.filterwarnings("ignore::UserWarning")  # torch warns about protocols other than 2 and legacy storages
@pytest.mark.parametrize(("build", "sides"), CORPUS)
def test_plaindata_refuses_whatever_the_weights_only_loader_refuses(
    tmp_path: Path, request: pytest.FixtureRequest, build: Build, sides: tuple[bool, bool]
) -> None:
    path = tmp_path / "item.pt"
    build(path, request)
    try:
        # map_location="cpu" as resumeproof.checkpoint loads: the storage location is not at issue here.
        loaded = torch.load(path, map_location="cpu", weights_only=True)
        torch_accepts = True
    except Exception:  # any refusal counts as one: UnpicklingError, RuntimeError, TypeError, ...
        torch_accepts = False
    try:
        tensors = plaindata.check(path)
        plain_accepts = True
    except plaindata.PlainDataError as err:
        assert str(path) in str(err)
        plain_accepts = False
    assert torch_accepts or not plain_accepts, "torch.load(weights_only=True) refuses it, plaindata.check accepts it"
    assert (torch_accepts, plain_accepts) == sides
    if torch_accepts and plain_accepts:
        assert tensors == tensor_count(loaded)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["item.pt"]  # nothing ran that left a marker


def test_every_allowed_global_is_in_torchs_weights_only_allowlist() -> None:
    torch_allows = torch._weights_only_unpickler._get_allowed_globals()
    ours = {f"{module}.{name}" for module, name in plaindata.ALLOWED}
    assert ours <= set(torch_allows), sorted(ours - set(torch_allows))
    assert torch_allows["torch._utils._rebuild_tensor_v2"] is torch._utils._rebuild_tensor_v2
    assert torch_allows["torch._utils._rebuild_parameter"] is torch._utils._rebuild_parameter
    assert torch_allows["collections.OrderedDict"] is collections.OrderedDict


def test_storage_item_sizes_are_torchs() -> None:
    torch_sizes = {name: dtype.itemsize for dtype, name in torch.storage._dtype_to_storage_type_map().items()}
    assert {name: torch_sizes.get(name) for name in plaindata.STORAGE_ITEMSIZE} == plaindata.STORAGE_ITEMSIZE


def test_trainer_checkpoint_tensor_count_is_torchs(interrupted_run: Path) -> None:
    path = interrupted_run / "checkpoint.pt"
    expected = tensor_count(torch.load(path, map_location="cpu", weights_only=True))
    assert expected > 0
    assert plaindata.check(path) == expected


@pytest.mark.parametrize("how", ["os.system", "builtins.exec"])
def test_pickle_that_would_run_code_never_runs(tmp_path: Path, how: str) -> None:
    # Control: the payload is live, so an absent marker below means it was refused unexecuted.
    control = tmp_path / "CONTROL"
    pickle.loads(pickle.dumps(code_that_touches(how, control)))
    assert control.exists()

    marker = tmp_path / "MARKER"
    path = tmp_path / "checkpoint.pt"
    torch.save({"model": code_that_touches(how, marker)}, path)
    with pytest.raises(plaindata.PlainDataError, match="is not allowed by weights_only loading") as caught:
        plaindata.check(path)
    assert str(path) in str(caught.value)
    assert not marker.exists()


def test_check_with_torch_accepts_the_trainer_checkpoint(interrupted_run: Path) -> None:
    plaindata.check_with_torch(interrupted_run / "checkpoint.pt")  # raises on refusal


def test_check_with_torch_refuses_code_unexecuted_with_one_line(tmp_path: Path) -> None:
    marker, path = tmp_path / "MARKER", tmp_path / "checkpoint.pt"
    torch.save({"model": code_that_touches("os.system", marker)}, path)
    with pytest.raises(plaindata.PlainDataError, match=r"torch.load\(weights_only=True\) refused it") as caught:
        plaindata.check_with_torch(path)
    assert str(path) in str(caught.value) and "\n" not in str(caught.value)
    assert not marker.exists()


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        pytest.param({"data/0": lambda data: None}, "storage record archive/data/0 is missing", id="storage-dropped"),
        pytest.param({"data/0": lambda data: data[:-1]}, "storage record archive/data/0 is missing", id="storage-cut"),
        pytest.param({"data/0": lambda data: data + bytes(8)}, "not 3 x DoubleStorage", id="storage-too-long"),
        pytest.param({"data.pkl": lambda data: None}, "expected one */data.pkl record, found 0", id="data-pkl-dropped"),
        pytest.param({"data.pkl": lambda data: data[:-8]}, "malformed pickle", id="data-pkl-cut"),
    ],
)
def test_damaged_torch_archive_is_refused(
    tmp_path: Path, change: dict[str, Callable[[bytes], bytes | None]], problem: str
) -> None:
    original, path = tmp_path / "archive.pt", tmp_path / "damaged.pt"
    torch.save(WEIGHTS, original)  # records under archive/, as torch names them after the file
    rewrite_records(original, path, change)
    with pytest.raises(Exception):  # noqa: B017 - the reference: torch refuses it, in whatever words
        torch.load(path, map_location="cpu", weights_only=True)
    with pytest.raises(plaindata.PlainDataError) as caught:
        plaindata.check(path)
    assert str(path) in str(caught.value)
    assert problem in str(caught.value)


@pytest.mark.parametrize(
    "content",
    [
        pytest.param(b"", id="empty"),
        pytest.param(b"not a zip archive\n", id="text"),
        pytest.param(pickle.dumps({"w": [1.0]}, protocol=2), id="bare-pickle"),
    ],
)
def test_file_that_is_not_a_zip_archive_is_refused(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "checkpoint.pt"
    path.write_bytes(content)
    with pytest.raises(plaindata.PlainDataError, match="not a torch zip archive") as caught:
        plaindata.check(path)
    assert str(path) in str(caught.value)


@pytest.mark.parametrize(
    "data_pkl",
    [
        pytest.param(b"\x80\x02a.", id="stack-underflow"),
        pytest.param(b"\x80\x02J\x01\x00", id="opcode-cut-short"),
        pytest.param(b"\x80\x02K\x01K\x02s.", id="setitem-on-an-int"),
        pytest.param(
            b"\x80\x02ctorch\nDoubleStorage\nN}X\x01\x00\x00\x00aK\x01s\x86b.",  # BUILD (None, {"a": 1}) on a storage
            id="build-slots-on-a-storage-class",
        ),
    ],
)
def test_malformed_pickle_is_refused_as_plaindata_error(tmp_path: Path, data_pkl: bytes) -> None:
    original, path = tmp_path / "archive.pt", tmp_path / "malformed.pt"
    torch.save(WEIGHTS, original)
    rewrite_records(original, path, {"data.pkl": lambda data: data_pkl})
    with pytest.raises(Exception):  # noqa: B017 - the reference refuses it (in several exception types)
        torch.load(path, map_location="cpu", weights_only=True)
    with pytest.raises(plaindata.PlainDataError) as caught:
        plaindata.check(path)
    assert str(path) in str(caught.value)


def test_check_never_imports_torch(tmp_path: Path, interrupted_run: Path) -> None:
    refused = tmp_path / "refused.pt"
    torch.save({"w": code_that_touches("os.system", tmp_path / "MARKER")}, refused)
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from resumeproof.verify import weights_only as plaindata\n"
        "print(plaindata.check(Path(sys.argv[1])))\n"
        "try:\n"
        "    plaindata.check(Path(sys.argv[2]))\n"
        "except plaindata.PlainDataError:\n"
        "    print('refused')\n"
        "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.')))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-B", "-c", script, str(interrupted_run / "checkpoint.pt"), str(refused)],
        cwd=REPO, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    count, verdict, torch_modules = proc.stdout.splitlines()
    assert int(count) == plaindata.check(interrupted_run / "checkpoint.pt")
    assert verdict == "refused"
    assert torch_modules == "[]"
    assert not (tmp_path / "MARKER").exists()
