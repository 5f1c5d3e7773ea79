"""resumeproof.common.weights_only: a torch-free check that refuses whatever torch.load(weights_only=True) refuses.

It may also refuse some files torch would load (a conservative refusal costs a verification, not a
safety hole); the corpus below names each such item, so that the list is written down and any
change to it is noticed. torch.save output of allowed content must be accepted.
"""

import collections
import contextlib
import io
import pickle
import runpy
import shutil
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from resumeproof.common import weights_only
from resumeproof.common.weights_only import allowlist, calls, opcodes, unpickler
from resumeproof.verify import torch_load
from tests.fuzz import zipwriter
from tests.fuzz.pickles import P
from tests.helpers import REPO, code_that_touches

BOTH_ACCEPT = (True, True)  # (torch.load accepts, check accepts)
CONSERVATIVE = (True, False)  # the check refuses what torch loads: allowed, and listed here on purpose
BOTH_REFUSE = (False, False)
REGRESSIONS = REPO / "tests" / "data" / "weights_only"

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
    """Pickles as `_rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks)` with any arguments."""

    def __init__(self, tensor: torch.Tensor, offset: Any, size: Any, stride: Any, requires_grad: Any = False) -> None:
        storage = torch.storage.TypedStorage(wrap_storage=tensor.untyped_storage(), dtype=tensor.dtype, _internal=True)
        self.args = (storage, offset, size, stride, requires_grad, collections.OrderedDict())

    def __reduce__(self) -> tuple[Any, ...]:
        return torch._utils._rebuild_tensor_v2, self.args


def rewrite_records(src: Path, dst: Path, change: dict[str, Callable[[bytes], bytes | None]]) -> None:
    """Copy a torch archive with the torch-exact writer, passing the records named in `change` through their
    function: new bytes, or None to drop the record."""
    prefix, records = zipwriter.read(src.read_bytes())
    assert set(change) <= {r.name for r in records}, sorted(r.name for r in records)
    kept = []
    for record in records:
        data = change.get(record.name, lambda data: data)(record.data)
        if data is not None:
            kept.append(zipwriter.Record(record.name, data))
    dst.write_bytes(zipwriter.write(kept, zipwriter.Layout(prefix=prefix)))


def edited(obj: Any, change: dict[str, Callable[[bytes], bytes | None]]) -> Build:
    def build(path: Path, request: pytest.FixtureRequest) -> None:
        original = path.with_name("original.pt")
        torch.save(obj, original)
        rewrite_records(original, path, change)
        original.unlink()

    return build


def with_attribute(value: Any) -> Any:
    value.note = "an attribute"
    return value


def tensor_count(value: Any, seen: set[int] | None = None) -> int:
    """Distinct tensors reachable through containers and OrderedDict attributes, as the check counts them."""
    seen = set() if seen is None else seen
    if id(value) in seen:
        return 0
    seen.add(id(value))
    if isinstance(value, torch.Tensor):
        return 1
    if isinstance(value, dict):
        attributes = list(vars(value).values()) if type(value) is collections.OrderedDict else []
        return sum(tensor_count(item, seen) for item in [*value.keys(), *value.values(), *attributes])
    if isinstance(value, list | tuple | set):
        return sum(tensor_count(item, seen) for item in value)
    return 0


def self_containing() -> list:
    value: list = []
    value.append(value)
    return value


def nested(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


BASE = torch.arange(12, dtype=torch.float64).reshape(3, 4)
INTS = torch.arange(6, dtype=torch.int64)
FLOATS = torch.arange(6, dtype=torch.float64)
WEIGHTS = {"w": torch.ones(3, dtype=torch.float64)}
FIVE_DTYPES = (torch.float64, torch.float32, torch.int64, torch.uint8, torch.bool)
V3_DTYPES = (torch.uint16, torch.uint32, torch.uint64, torch.float8_e4m3fn, torch.float8_e5m2, torch.complex32)

CORPUS = [
    pytest.param(trainer_checkpoint, BOTH_ACCEPT, id="trainer-checkpoint"),
    pytest.param(
        saved({str(d): torch.ones(3, dtype=d) for d in FIVE_DTYPES}), BOTH_ACCEPT, id="tensors-of-five-dtypes"
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
        saved([torch.empty(0), torch.empty(2, 0, 3), BASE[3:], torch.tensor(1.5), torch.zeros(2, 0)[1:]]),
        BOTH_ACCEPT,
        id="empty-and-0-d",
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
    # What the first check's 16 globals refused: torch.save writes them from allowed content.
    pytest.param(saved({1, 2}), BOTH_ACCEPT, id="set"),
    pytest.param(saved(b"bytes"), BOTH_ACCEPT, id="bytes"),
    pytest.param(saved([bytearray(b"ab"), bytearray()]), BOTH_ACCEPT, id="bytearray"),
    pytest.param(saved(1 + 2j), BOTH_ACCEPT, id="complex-number"),
    pytest.param(saved(collections.Counter(a=1)), BOTH_ACCEPT, id="counter"),
    pytest.param(saved([torch.float64, torch.uint16, torch.qint8]), BOTH_ACCEPT, id="dtype"),
    pytest.param(saved(torch.Size([2, 3])), BOTH_ACCEPT, id="torch-size"),
    pytest.param(saved([torch.device("cpu"), torch.device("cuda", 1)]), BOTH_ACCEPT, id="torch-device"),
    pytest.param(
        saved([torch.strided, torch.per_tensor_affine, torch.FloatTensor]), BOTH_ACCEPT, id="layout-qscheme-class"
    ),
    pytest.param(saved(torch.ones(2, dtype=torch.uint16)), BOTH_ACCEPT, id="uint16-tensor-rebuild-v3"),
    pytest.param(saved([torch.zeros(2, dtype=d) for d in V3_DTYPES]), BOTH_ACCEPT, id="every-rebuild-v3-dtype"),
    pytest.param(saved(torch.ones(2).untyped_storage()), BOTH_ACCEPT, id="untyped-storage"),
    pytest.param(
        saved([torch.ones(2, dtype=torch.complex64).conj(), torch.ones(2, dtype=torch.complex64).conj().imag]),
        BOTH_ACCEPT,
        id="conj-and-neg-views",
    ),
    pytest.param(
        saved({(1, "a"): torch.ones(1), torch.float32: [torch.ones(1)] * 2}),
        BOTH_ACCEPT,
        id="tuple-and-dtype-keys-shared-tensor",
    ),
    # What torch loads and the check refuses, on purpose (docs/weights-only.md says why).
    pytest.param(saved(WEIGHTS, _use_new_zipfile_serialization=False), CONSERVATIVE, id="legacy-non-zip-format"),
    pytest.param(saved(WEIGHTS, _disable_byteorder_record=True), CONSERVATIVE, id="no-byteorder-record"),
    pytest.param(saved(with_attribute(torch.ones(2))), CONSERVATIVE, id="tensor-with-an-attribute"),
    pytest.param(
        saved(with_attribute(torch.nn.Parameter(torch.ones(2)))), CONSERVATIVE, id="parameter-with-an-attribute"
    ),
    pytest.param(saved(torch.quantize_per_tensor(torch.ones(2), 0.1, 0, torch.qint8)), CONSERVATIVE, id="quantized"),
    pytest.param(saved(torch.ones(2, 2).to_sparse()), CONSERVATIVE, id="sparse-tensor"),
    pytest.param(saved(torch.ones(2, device="meta")), CONSERVATIVE, id="meta-tensor"),
    pytest.param(saved(self_containing()), CONSERVATIVE, id="list-containing-itself"),
    pytest.param(saved(nested(150)), CONSERVATIVE, id="nested-150-deep"),
    # What weights_only refuses: the check must refuse it too.
    pytest.param(saved({"a": np.arange(3)}), BOTH_REFUSE, id="numpy-array"),
    pytest.param(saved(np.float64(1.0)), BOTH_REFUSE, id="numpy-scalar"),
    pytest.param(saved({"c": Custom()}), BOTH_REFUSE, id="custom-class-instance"),
    pytest.param(saved(frozenset({1})), BOTH_REFUSE, id="frozenset"),
    pytest.param(saved(collections.defaultdict(int)), BOTH_REFUSE, id="defaultdict"),
    pytest.param(saved(b""), BOTH_REFUSE, id="empty-bytes"),
    pytest.param(runs_code("os.system"), BOTH_REFUSE, id="os-system-reduce"),
    pytest.param(runs_code("builtins.exec"), BOTH_REFUSE, id="builtins-exec-reduce"),
    pytest.param(saved({"f": Path.cwd}), BOTH_REFUSE, id="function-reference"),
    pytest.param(saved(RawTensor(FLOATS, 0, (7,), (1,))), BOTH_REFUSE, id="tensor-past-its-storage"),
    pytest.param(saved(RawTensor(FLOATS, 0, (2, 3), (1,))), BOTH_REFUSE, id="sizes-and-strides-of-unequal-length"),
    pytest.param(saved(WEIGHTS, pickle_protocol=4), BOTH_REFUSE, id="pickle-protocol-4"),
    pytest.param(
        edited(WEIGHTS, {"data.pkl": lambda data: pickle.dumps({"a": [1, 2.0]}, protocol=0)}),
        BOTH_REFUSE,
        id="pickle-protocol-0",
    ),
    pytest.param(saved(RawTensor(FLOATS, 5, (6,), (-1,))), BOTH_REFUSE, id="negative-stride"),
    pytest.param(saved(RawTensor(FLOATS, 0, (-1,), (1,))), BOTH_REFUSE, id="negative-size"),
    pytest.param(saved(RawTensor(FLOATS, 0.0, (6,), (1,))), BOTH_REFUSE, id="float-offset"),
    pytest.param(
        saved(RawTensor(INTS, 0, (6,), (1,), requires_grad=True)), BOTH_REFUSE, id="int-tensor-requiring-grad"
    ),
    pytest.param(edited(WEIGHTS, {"version": lambda data: None}), BOTH_REFUSE, id="archive-without-version-record"),
    pytest.param(
        saved(torch.zeros(2, dtype=torch.float8_e5m2).requires_grad_()),
        BOTH_REFUSE,
        id="rebuild-v3-tensor-requiring-grad-found-by-the-fuzzer",
    ),
]


@pytest.mark.filterwarnings("ignore::UserWarning")  # torch warns about protocols other than 2 and legacy storages
@pytest.mark.parametrize(("build", "sides"), CORPUS)
def test_check_refuses_whatever_the_weights_only_loader_refuses(
    tmp_path: Path, request: pytest.FixtureRequest, build: Build, sides: tuple[bool, bool]
) -> None:
    path = tmp_path / "item.pt"
    build(path, request)
    try:
        loaded = torch.load(path, map_location="cpu", weights_only=True)
        torch_accepts = True
    except Exception:  # any refusal counts as one: UnpicklingError, RuntimeError, TypeError, ...
        torch_accepts = False
    try:
        checked = weights_only.check(path)
        check_accepts = True
    except weights_only.WeightsOnlyError as err:
        assert str(err).startswith(f"{path}: ") and "\n" not in str(err)
        check_accepts = False
    assert torch_accepts or not check_accepts, "torch.load(weights_only=True) refuses it, the check accepts it"
    assert (torch_accepts, check_accepts) == sides
    if torch_accepts and check_accepts:
        assert checked.tensors == tensor_count(loaded)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["item.pt"]  # nothing ran that left a marker


def test_allowlist_is_exactly_torchs_default_weights_only_allowlist() -> None:
    assert set(allowlist.ALLOWED) == set(torch._weights_only_unpickler._get_allowed_globals())


def test_dtype_table_matches_torch() -> None:
    legacy = torch.storage._dtype_to_storage_type_map()
    for name, dtype in allowlist.DTYPES.items():
        real = getattr(torch, name)
        assert dtype.itemsize == real.itemsize or not dtype.rebuild, name
        assert dtype.complex == real.is_complex, name
        if dtype.rebuild:  # quantized and sub-byte dtypes have no plain tensors here
            assert (dtype.rebuild == "v2") == (real in legacy), name
            try:
                torch.zeros(1, dtype=real).requires_grad_()
                grad = True
            except RuntimeError:
                grad = False
            assert dtype.grad == grad, name


def test_storage_classes_name_torchs_dtypes() -> None:
    legacy = {
        name: str(dtype).removeprefix("torch.") for dtype, name in torch.storage._dtype_to_storage_type_map().items()
    }
    assert {f"{prefix}Storage": dtype for prefix, dtype in allowlist.LEGACY_STORAGES.items()} == {
        name: dtype for name, dtype in legacy.items() if not name.startswith("Q")
    }


def test_device_types_and_layouts_are_torchs() -> None:
    for kind in calls.DEVICE_TYPES:
        torch.device(kind, calls.MAX_DEVICE_INDEX)  # raises if torch does not know the type
    torch.serialization._get_layout("torch.strided")  # fills the cache
    assert set(calls.LAYOUTS) == set(torch.serialization._get_layout.cache)


def test_opcodes_are_a_subset_of_torchs_and_builtin_mapping_is_torchs() -> None:
    pickle_opcodes = {name for name, value in vars(pickle).items() if type(value) is bytes and len(value) == 1}
    torch_opcodes = {name for name in vars(torch._weights_only_unpickler) if name in pickle_opcodes}
    assert set(opcodes.OPCODES) <= torch_opcodes
    assert {"NEWOBJ", "EMPTY_SET", "SHORT_BINSTRING"} == torch_opcodes - set(opcodes.OPCODES)
    assert torch._utils.IMPORT_MAPPING["__builtin__"] == "builtins"
    builtins_allowed = {n.split(".")[1] for n in allowlist.ALLOWED if n.startswith("builtins.")}
    assert not {("__builtin__", name) for name in builtins_allowed} & set(torch._utils.NAME_MAPPING)


def test_trainer_checkpoint_is_accepted_in_milliseconds_with_torchs_tensor_count(interrupted_run: Path) -> None:
    path = interrupted_run / "checkpoint.pt"
    expected = tensor_count(torch.load(path, map_location="cpu", weights_only=True))
    assert expected > 0
    assert weights_only.check(path).tensors == expected
    best = min(_seconds(lambda: weights_only.check(path)) for _ in range(5))
    print(f"check of the trainer's checkpoint: {best * 1e3:.2f} ms")
    assert best < 0.05


@pytest.mark.parametrize("how", ["os.system", "builtins.exec"])
def test_pickle_that_would_run_code_never_runs(tmp_path: Path, how: str) -> None:
    control = tmp_path / "CONTROL"  # the payload is live: an absent marker below means it was refused unexecuted
    pickle.loads(pickle.dumps(code_that_touches(how, control)))
    assert control.exists()
    marker, path = tmp_path / "MARKER", tmp_path / "checkpoint.pt"
    torch.save({"model": code_that_touches(how, marker)}, path)
    with pytest.raises(weights_only.WeightsOnlyError, match="is not allowed by weights_only loading") as caught:
        weights_only.check(path)
    assert str(path) in str(caught.value)
    assert not marker.exists()


def test_check_with_torch_accepts_the_trainer_checkpoint(interrupted_run: Path) -> None:
    torch_load.check_with_torch(interrupted_run / "checkpoint.pt")  # raises on refusal


def test_check_with_torch_refuses_code_unexecuted_with_one_line(tmp_path: Path) -> None:
    marker, path = tmp_path / "MARKER", tmp_path / "checkpoint.pt"
    torch.save({"model": code_that_touches("os.system", marker)}, path)
    with pytest.raises(weights_only.WeightsOnlyError, match=r"torch.load\(weights_only=True\) refused it") as caught:
        torch_load.check_with_torch(path)
    assert str(path) in str(caught.value) and "\n" not in str(caught.value)
    assert not marker.exists()


HOOKS = P.global_("collections", "OrderedDict") + P.op("EMPTY_TUPLE") + P.op("REDUCE")
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


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        pytest.param({"data/0": lambda data: None}, "data/0 has no record in the archive", id="storage-dropped"),
        pytest.param({"data/0": lambda data: data[:-1]}, "holds 23 bytes, not the 24", id="storage-cut"),
        pytest.param({"data/0": lambda data: data + bytes(8)}, "holds 32 bytes, not the 24", id="storage-too-long"),
        pytest.param({"data.pkl": lambda data: None}, "member 0 is '.format_version'", id="data-pkl-dropped"),
        pytest.param({"data.pkl": lambda data: data[:-8]}, "data.pkl", id="data-pkl-cut"),
        pytest.param({"byteorder": lambda data: b"middle"}, "record byteorder holds 'middle'", id="byteorder"),
    ],
)
def test_damaged_torch_archive_is_refused(
    tmp_path: Path, change: dict[str, Callable[[bytes], bytes | None]], problem: str
) -> None:
    original, path = tmp_path / "archive.pt", tmp_path / "damaged.pt"
    torch.save(WEIGHTS, original)
    rewrite_records(original, path, change)
    with pytest.raises(Exception):  # noqa: B017 - the reference: torch refuses it, in whatever words
        torch.load(path, map_location="cpu", weights_only=True)
    with pytest.raises(weights_only.WeightsOnlyError) as caught:
        weights_only.check(path)
    assert str(caught.value).startswith(f"{path}: ")
    assert problem in str(caught.value)


@pytest.mark.parametrize("length", [488, 489, 510, 511, 600])
def test_member_names_longer_than_torchs_name_buffer_are_refused(tmp_path: Path, length: int) -> None:
    # torch lists names into a 512-byte buffer and refuses an archive whose cut names lose the prefix.
    buffer = io.BytesIO()
    torch.save(WEIGHTS, buffer)
    path = tmp_path / "long.pt"
    path.write_bytes(zipwriter.write(zipwriter.read(buffer.getvalue())[1], zipwriter.Layout(prefix="p" * length)))
    try:
        torch.load(path, map_location="cpu", weights_only=True)
        torch_accepts = True
    except Exception:
        torch_accepts = False
    try:
        weights_only.check(path)
        check_accepts = True
    except weights_only.WeightsOnlyError:
        check_accepts = False
    assert torch_accepts or not check_accepts
    assert check_accepts == (length + len("/.data/serialization_id") <= 511)


def test_torch_exact_writer_reproduces_torch_save_byte_for_byte(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    torch.save({"a": torch.ones(3), "e": torch.empty(0), "b": torch.arange(500)}, buffer)
    prefix, records = zipwriter.read(buffer.getvalue())
    assert zipwriter.write(records, zipwriter.Layout(prefix=prefix)) == buffer.getvalue()


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


def test_unreadable_path_is_a_refusal_naming_it(tmp_path: Path) -> None:
    for path in (tmp_path / "missing.pt", tmp_path):
        with pytest.raises(weights_only.WeightsOnlyError, match="cannot be read") as caught:
            weights_only.check(path)
        assert str(caught.value).startswith(f"{path}: ")


@pytest.mark.parametrize("failure", [MemoryError, RecursionError, NotImplementedError, RuntimeError, OSError])
def test_any_failure_inside_the_check_becomes_its_own_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failure: type[BaseException]
) -> None:
    path = tmp_path / "checkpoint.pt"
    torch.save(WEIGHTS, path)

    def fail(*args: Any) -> None:
        raise failure("x" * 10_000)

    monkeypatch.setattr(unpickler, "load", fail)
    with pytest.raises(weights_only.WeightsOnlyError) as caught:
        weights_only.check(path)
    assert str(caught.value).startswith(f"{path}: ") and len(str(caught.value)) < len(str(path)) + 100


def _seconds(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    with contextlib.suppress(weights_only.WeightsOnlyError):
        action()
    return time.perf_counter() - start


REGRESSION_FILES = sorted(REGRESSIONS.glob("*.pt"))
FAST = {
    "case_insensitive_duplicate",
    "second_central_directory",
    "memo_index_2_to_28",
    "nested_10000_deep",
    "tuples_nested_100000_deep",
}


@pytest.mark.parametrize("path", REGRESSION_FILES, ids=[p.stem for p in REGRESSION_FILES])
def test_regression_file_is_refused_quickly_in_bounded_memory(tmp_path: Path, path: Path) -> None:
    copy = tmp_path / path.name
    shutil.copyfile(path, copy)
    best = min(_seconds(lambda: weights_only.check(copy)) for _ in range(3))
    tracemalloc.start()  # separately: tracing every allocation slows the check down several times
    try:
        _seconds(lambda: weights_only.check(copy))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    with pytest.raises(weights_only.WeightsOnlyError) as caught:
        weights_only.check(copy)
    assert str(caught.value).startswith(f"{copy}: ") and "\n" not in str(caught.value)
    assert peak < 8 << 20, f"{peak} bytes"
    assert best < (0.02 if path.stem in FAST else 3.0), f"{best * 1e3:.1f} ms"
    assert not (tmp_path / "MARKER").exists()


def test_regression_files_are_the_ones_the_script_writes() -> None:
    make = runpy.run_path(str(REGRESSIONS / "make.py"), run_name="make")  # defines FILES, writes nothing

    assert sorted(p.stem for p in REGRESSION_FILES) == sorted(make["FILES"])


def test_memo_bomb_stays_small_in_a_fresh_process() -> None:
    script = (
        "import resource, sys\n"
        "from pathlib import Path\n"
        "from resumeproof.common import weights_only\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "try:\n"
        "    weights_only.check(Path(sys.argv[1]))\n"
        "except weights_only.WeightsOnlyError:\n"
        "    pass\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)\n"
    )
    path = REGRESSIONS / "memo_index_2_to_28.pt"
    proc = subprocess.run(
        [sys.executable, "-B", "-c", script, str(path)], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert int(proc.stdout) < 16 * 1024, f"{proc.stdout} KB more peak memory"  # ru_maxrss is in KB on Linux


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


def test_check_never_imports_torch(tmp_path: Path, interrupted_run: Path) -> None:
    refused = tmp_path / "refused.pt"
    torch.save({"w": code_that_touches("os.system", tmp_path / "MARKER")}, refused)
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from resumeproof.common import weights_only\n"
        "print(weights_only.check(Path(sys.argv[1])).tensors)\n"
        "try:\n"
        "    weights_only.check(Path(sys.argv[2]))\n"
        "except weights_only.WeightsOnlyError:\n"
        "    print('refused')\n"
        "print(weights_only.pickle_globals(b'\\x80\\x02N.'))\n"
        "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.')))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-B", "-c", script, str(interrupted_run / "checkpoint.pt"), str(refused)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    count, verdict, globals_, torch_modules = proc.stdout.splitlines()
    assert int(count) == weights_only.check(interrupted_run / "checkpoint.pt").tensors
    assert verdict == "refused" and globals_ == "[]"
    assert torch_modules == "[]"
    assert not (tmp_path / "MARKER").exists()
