"""resumeproof.common.weights_only: a torch-free check that refuses whatever torch.load(weights_only=True) refuses.

It may also refuse some files torch would load (a conservative refusal costs a verification, not a
safety hole); the corpus below names each such item, so that the list is written down and any
change to it is noticed. torch.save output of allowed content must be accepted.

These tests hold `check` whole, against torch (the differential tests) and within its bounds of time and memory:
the modules it is made of are tested through it here (container.py, records.py, unpickler.py, tensors.py,
values.py, walk.py, budget.py, limits.py, source.py). What one module holds against torch on its own is in
tests/common/weights_only/ (allowlist, calls, opcodes, scan, container, errors); the seeded fuzz slice is
tests/common/test_weights_only_fuzz.py, the real loader as a second authority tests/verify/run/test_torch_load.py.
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
from resumeproof.common.weights_only import unpickler
from tests.fuzz import zipwriter
from tests.helpers import REPO, code_that_touches, rewrite_records

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
    # The documented refusals say why; any other failure is the check's own bug, said as such, its cause kept.
    bug = failure not in (MemoryError, RecursionError, OSError)
    assert (weights_only.INTERNAL in str(caught.value)) == bug
    assert isinstance(caught.value.__cause__, failure) == bug


def test_a_bug_in_the_check_is_an_internal_error_refused_with_its_traceback_in_the_debug_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "checkpoint.pt"
    torch.save(WEIGHTS, path)
    weights_only.check(path)  # accepted as it is: the refusal below is the bug's alone

    def broken(*args: Any) -> None:
        return None.attribute  # type: ignore[attr-defined]

    monkeypatch.setattr(unpickler, "load", broken)
    with caplog.at_level("DEBUG", logger="resumeproof"), pytest.raises(weights_only.WeightsOnlyError) as caught:
        weights_only.check(path)
    assert str(caught.value) == f"{path}: internal error in the weights_only check (AttributeError); refused"
    (logged,) = caplog.records
    assert logged.exc_info is not None and logged.exc_info[0] is AttributeError


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
