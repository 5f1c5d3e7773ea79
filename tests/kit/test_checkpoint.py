"""The kit's checkpoint I/O and layout validation against the bundled trainer: what `save` writes, what loading refuses.

Every refusal must be a CheckpointError whose message is one line naming the file and the problem,
and must leave every file it looked at byte for byte as it was. A few tests then run
`python -B train.py --resume ...` in a fresh process, where a refusal is exit status 2 and one line.
"""

import copy
import hashlib
import json
import pickle
import random
import re
import shutil
import subprocess
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import train
from resumeproof.kit import checkpoint, layout
from resumeproof.kit.identity import versions
from resumeproof.kit.layout import (
    CONFIG,
    DATA,
    HISTORY,
    IDENTITY,
    MODEL,
    OPTIMIZER,
    PROGRESS,
    RNG,
    SCHEDULER,
    VERSIONS,
)
from tests.helpers import code_that_touches, run_train

CHECKPOINT, SIDECAR = "checkpoint.pt", "checkpoint.pt.sha256"


# -- fixtures and helpers -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def expected() -> layout.Expected:
    """What the bundled trainer requires of a checkpoint, built the way train.py builds it."""
    exp = train.Experiment()
    identity = train.kit.identity(train.CODE, [train.DATA_FILE])
    return layout.Expected.of(float64_build(exp), train.asdict(exp), identity, exp.batch)


def float64_build(exp: train.Experiment) -> layout.Training:
    """train.build as train.py runs it: with float64 as torch's default dtype."""
    default = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        return train.build(exp)
    finally:
        torch.set_default_dtype(default)


def load(path: Path, expected: layout.Expected, override: bool = False) -> tuple[dict[str, Any], list[str]]:
    """What train.py does with --resume: the checked load, then validation against the fresh build."""
    state = checkpoint.load(path)
    return state, layout.validate(path, state, expected, override)


@pytest.fixture(scope="module")
def trained_state(interrupted_run: Path) -> dict[str, Any]:
    return torch.load(interrupted_run / CHECKPOINT, map_location="cpu", weights_only=True)


@pytest.fixture
def state(trained_state: dict[str, Any]) -> dict[str, Any]:
    """A private copy of the trainer's state after 5 updates, to tamper with."""
    return copy.deepcopy(trained_state)


@pytest.fixture
def ckpt(tmp_path: Path, interrupted_run: Path) -> Path:
    """A private copy of the trainer's checkpoint.pt and its sidecar."""
    path = tmp_path / CHECKPOINT
    shutil.copyfile(interrupted_run / CHECKPOINT, path)
    shutil.copyfile(interrupted_run / SIDECAR, tmp_path / SIDECAR)
    return path


def write_sidecar(path: Path) -> str:
    """A valid sha256sum line for the bytes now in `path`, written independently of the product code."""
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    path.with_name(path.name + ".sha256").write_text(f"{digest}  {path.name}\n", encoding="ascii")
    return digest


def save_tampered(directory: Path, state: dict[str, Any]) -> Path:
    """`state` written by checkpoint.save, so that its fingerprint is valid and only the content is wrong."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / CHECKPOINT
    checkpoint.save(path, state)
    return path


def files_in(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file()} if directory.is_dir() else {}


def refusal(path: Path, expected: layout.Expected, override: bool = False) -> str:
    """Load `path`; require a one-line CheckpointError naming it and no change to any file beside it."""
    before = files_in(path.parent)
    with pytest.raises(checkpoint.CheckpointError) as caught:
        load(path, expected, override)
    message = str(caught.value)
    assert "\n" not in message, message
    assert str(path) in message, message
    assert files_in(path.parent) == before, "a refused load changed a file"
    return message


def assert_same_tree(a: Any, b: Any, where: str = "state") -> None:
    """Equal keys in the same order, equal types, tensors equal in dtype, shape and every value."""
    assert type(a) is type(b), f"{where}: {type(a).__name__} vs {type(b).__name__}"
    if isinstance(a, torch.Tensor):
        assert a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b), where
    elif isinstance(a, dict):
        assert list(a) == list(b), where
        for key in a:
            assert_same_tree(a[key], b[key], f"{where}.{key}")
    elif isinstance(a, list | tuple):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same_tree(x, y, f"{where}[{i}]")
    else:
        assert a == b, where


def put(keys: tuple[Any, ...], value: Any) -> Callable[[dict[str, Any]], None]:
    """A tampering: state[k0][k1]...[kn] = value."""

    def tamper(state: dict[str, Any]) -> None:
        for key in keys[:-1]:
            state = state[key]
        state[keys[-1]] = copy.deepcopy(value)

    return tamper


def replace_pickle(src: Path, dst: Path, data_pkl: bytes) -> None:
    """Copy a torch zip archive, with its data.pkl record replaced by `data_pkl`."""
    with zipfile.ZipFile(src) as old, zipfile.ZipFile(dst, "w") as new:
        for info in old.infolist():
            new.writestr(info, data_pkl if info.filename.endswith("/data.pkl") else old.read(info))


def single_error_line(proc: subprocess.CompletedProcess) -> str:
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert "Traceback" not in proc.stderr, proc.stderr
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("train.py: error:"), proc.stderr
    return lines[0]


# -- save: what lands on disk -------------------------------------------------------------------


def test_trainer_checkpoint_is_accepted(ckpt: Path, expected: layout.Expected) -> None:
    state, overridden = load(ckpt, expected)
    assert overridden == []
    assert state[PROGRESS]["step"] == 5


def test_saved_state_loads_back_equal(tmp_path: Path, state: dict[str, Any], expected: layout.Expected) -> None:
    path = tmp_path / CHECKPOINT
    digest = checkpoint.save(path, state)
    loaded, overridden = load(path, expected)
    assert overridden == []
    assert_same_tree(state, loaded)
    assert digest == hashlib.sha256(path.read_bytes()).hexdigest()


def test_sidecar_is_in_sha256sum_format_and_matches_sha256sum(tmp_path: Path, state: dict[str, Any]) -> None:
    digest = checkpoint.save(tmp_path / CHECKPOINT, state)
    text = (tmp_path / SIDECAR).read_text(encoding="ascii")
    assert re.fullmatch(r"[0-9a-f]{64}  checkpoint\.pt\n", text), repr(text)
    assert text == f"{digest}  {CHECKPOINT}\n"
    computed = subprocess.run(["sha256sum", CHECKPOINT], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert computed.stdout == text
    checked = subprocess.run(
        ["sha256sum", "--check", "--strict", SIDECAR], cwd=tmp_path, capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout == f"{CHECKPOINT}: OK\n"


def test_save_leaves_no_temporary_file(tmp_path: Path, state: dict[str, Any]) -> None:
    checkpoint.save(tmp_path / CHECKPOINT, state)
    checkpoint.save(tmp_path / CHECKPOINT, state)  # and replacing a checkpoint leaves none either
    assert sorted(p.name for p in tmp_path.iterdir()) == [CHECKPOINT, SIDECAR]


def test_state_the_weights_only_loader_refuses_is_never_written(tmp_path: Path, state: dict[str, Any]) -> None:
    path = tmp_path / CHECKPOINT
    checkpoint.save(path, state)
    before = files_in(tmp_path)
    state[HISTORY][0]["noise"] = np.zeros(2)  # a numpy array: weights_only refuses it
    with pytest.raises(checkpoint.CheckpointError, match="weights_only") as caught:
        checkpoint.save(path, state)
    assert str(path) in str(caught.value)
    assert files_in(tmp_path) == before  # the earlier checkpoint and sidecar stand, no temporary file


# -- refusals: damaged bytes --------------------------------------------------------------------


@pytest.mark.parametrize("sidecar", ["original", "rewritten"])
def test_checkpoint_cut_at_any_4_kib_boundary_is_refused(
    tmp_path: Path, interrupted_run: Path, expected: layout.Expected, sidecar: str
) -> None:
    """With its original sidecar the sha256 refuses the cut file; with a sidecar rewritten to match
    the cut bytes, the torch/zip layer must refuse it on its own."""
    raw = (interrupted_run / CHECKPOINT).read_bytes()
    cuts = [*range(0, len(raw), 4096), len(raw) - 1]  # every 4 KiB boundary below the size, and one byte short
    assert len(cuts) >= 5
    for size in cuts:
        path = tmp_path / f"cut-{size}" / CHECKPOINT
        path.parent.mkdir()
        path.write_bytes(raw[:size])
        if sidecar == "rewritten":
            write_sidecar(path)
        else:
            shutil.copyfile(interrupted_run / SIDECAR, path.parent / SIDECAR)
        message = refusal(path, expected)
        if size == 0:
            assert "size 0 bytes" in message, message
        elif sidecar == "original":
            assert "sha256" in message, message
        else:
            assert "not a readable torch checkpoint" in message, message


def test_any_flipped_byte_is_caught_by_the_sha256(ckpt: Path, expected: layout.Expected) -> None:
    raw = ckpt.read_bytes()
    rng = random.Random(20260529)
    for position in rng.sample(range(len(raw)), 300):
        damaged = bytearray(raw)
        damaged[position] ^= 1 << rng.randrange(8)
        ckpt.write_bytes(damaged)
        message = refusal(ckpt, expected)
        assert "sha256" in message and "does not match" in message, (position, message)


def test_empty_checkpoint_is_refused(tmp_path: Path, expected: layout.Expected) -> None:
    path = tmp_path / CHECKPOINT
    path.write_bytes(b"")
    write_sidecar(path)  # even with a matching fingerprint
    assert "size 0 bytes" in refusal(path, expected)


@pytest.mark.parametrize("kind", ["nonexistent", "directory"])
def test_resume_path_that_is_not_a_file_is_refused(tmp_path: Path, expected: layout.Expected, kind: str) -> None:
    path = tmp_path / CHECKPOINT
    if kind == "directory":
        path.mkdir()
    assert "no such checkpoint file" in refusal(path, expected)


# -- refusals: the sidecar ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sidecar", "problem"),
    [
        pytest.param(None, "fingerprint file checkpoint.pt.sha256 is missing", id="missing"),
        pytest.param(lambda digest: "", "sha256sum format", id="empty"),
        pytest.param(lambda digest: "not a digest\n", "sha256sum format", id="not-a-digest"),
        pytest.param(lambda digest: f"{digest}\n", "sha256sum format", id="digest-without-file-name"),
        pytest.param(lambda digest: f"{digest} checkpoint.pt\n", "sha256sum format", id="one-space"),
        pytest.param(lambda digest: f"{digest[1:]}  checkpoint.pt\n", "sha256sum format", id="63-hex-digits"),
        pytest.param(lambda digest: f"{digest}  checkpoint.pt\n" * 2, "sha256sum format", id="two-lines"),
        pytest.param(
            lambda digest: f"{digest}  other.pt\n",
            "names 'other.pt', expected 'checkpoint.pt'",
            id="names-another-file",
        ),
        pytest.param(
            lambda digest: f"{digest}  runs/checkpoint.pt\n", "names 'runs/checkpoint.pt'", id="names-another-path"
        ),
    ],
)
def test_bad_sidecar_is_refused(
    ckpt: Path, expected: layout.Expected, sidecar: Callable[[str], str] | None, problem: str
) -> None:
    side = ckpt.with_name(SIDECAR)
    digest = hashlib.sha256(ckpt.read_bytes()).hexdigest()
    if sidecar is None:
        side.unlink()
    else:
        side.write_text(sidecar(digest), encoding="ascii")
    assert problem in refusal(ckpt, expected)


# -- refusals: pickles that are not plain data --------------------------------------------------


@pytest.mark.parametrize("how", ["os.system", "builtins.exec"])
def test_pickle_that_would_run_code_is_refused_unexecuted(tmp_path: Path, expected: layout.Expected, how: str) -> None:
    # Control: the payload is live, so an absent marker below means the loader refused it unexecuted.
    control = tmp_path / "CONTROL"
    pickle.loads(pickle.dumps(code_that_touches(how, control)))
    assert control.exists()

    marker = tmp_path / "MARKER"
    path = tmp_path / CHECKPOINT
    torch.save({layout.FORMAT_KEY: layout.FORMAT, MODEL: code_that_touches(how, marker)}, path)
    write_sidecar(path)  # a valid fingerprint: only the weights_only loader stands in the way
    message = refusal(path, expected)
    assert "weights_only" in message, message
    assert not marker.exists()


def test_torch_file_holding_a_list_is_refused(tmp_path: Path, expected: layout.Expected) -> None:
    path = tmp_path / CHECKPOINT
    torch.save([torch.zeros(2)], path)
    write_sidecar(path)
    assert "holds a list, expected a dict" in refusal(path, expected)


@pytest.mark.parametrize(
    "data_pkl",
    [
        pytest.param(b"\x80\x02a.", id="stack-underflow"),  # APPEND with nothing on the stack
        pytest.param(b"\x80\x02J\x01\x00", id="opcode-cut-short"),  # BININT with 2 of its 4 bytes
        pytest.param(b"\x80\x02K\x01K\x02s.", id="setitem-on-an-int"),
    ],
)
def test_malformed_pickle_stream_is_refused_as_checkpoint_error(
    tmp_path: Path, ckpt: Path, expected: layout.Expected, data_pkl: bytes
) -> None:
    path = tmp_path / "malformed" / CHECKPOINT
    path.parent.mkdir()
    replace_pickle(ckpt, path, data_pkl)
    write_sidecar(path)
    assert "not a readable torch checkpoint" in refusal(path, expected)


# -- refusals: a well-formed file with the wrong content ----------------------------------------


@pytest.mark.parametrize("key", sorted(layout.REQUIRED_KEYS))
def test_checkpoint_missing_a_top_level_key_is_refused(
    tmp_path: Path, state: dict[str, Any], expected: layout.Expected, key: str
) -> None:
    del state[key]
    assert f"missing {key}" in refusal(save_tampered(tmp_path, state), expected)


@pytest.mark.parametrize(
    ("tamper", "problem"),
    [
        pytest.param(
            put((MODEL, "hidden.weight"), torch.zeros(2, 8, dtype=torch.float64)),
            "model.hidden.weight is torch.float64 [2, 8], expected torch.float64 [8, 2]",
            id="model-tensor-of-wrong-shape",
        ),
        pytest.param(
            put((MODEL, "hidden.bias"), torch.zeros(8, dtype=torch.float32)),
            "model.hidden.bias is torch.float32 [8], expected torch.float64 [8]",
            id="model-tensor-of-wrong-dtype",
        ),
        pytest.param(put((MODEL, "out.bias"), [0.0]), "model.out.bias is a list, expected a tensor", id="model-list"),
        pytest.param(
            put((MODEL, "extra.weight"), torch.zeros(1, dtype=torch.float64)), "model holds", id="extra-param"
        ),
        pytest.param(
            put((OPTIMIZER, "state", 1, "exp_avg"), torch.zeros(9, dtype=torch.float64)),
            "optimizer.state.1.exp_avg is torch.float64 [9], expected torch.float64 [8]",
            id="optimizer-moment-of-wrong-shape",
        ),
        pytest.param(
            put((RNG, "torch"), torch.zeros(3, dtype=torch.uint8)),
            "generator 'torch' refuses its saved state",
            id="torch-rng-cut",
        ),
        pytest.param(put((RNG, "numpy", "bit_generator"), "MT19937"), "PCG64", id="numpy-rng-of-another-kind"),
        pytest.param(lambda state: state[RNG].pop("python"), "saved generators ['numpy', 'torch']", id="rng-missing"),
        pytest.param(
            put((DATA, "permutation"), torch.zeros(24, dtype=torch.int64)),
            "data.permutation is not a permutation of 0..23",
            id="permutation-with-repeats",
        ),
        pytest.param(put((layout.FORMAT_KEY,), "resumeproof-checkpoint/0"), "format is", id="other-format"),
        pytest.param(put((PROGRESS, "step"), -1), "progress.step must be a non-negative int", id="negative-step"),
    ],
)
def test_checkpoint_with_a_section_of_the_wrong_shape_is_refused(
    tmp_path: Path, state: dict[str, Any], expected: layout.Expected, tamper: Callable, problem: str
) -> None:
    tamper(state)
    assert problem in refusal(save_tampered(tmp_path, state), expected)


@pytest.mark.parametrize(
    ("tamper", "problem"),
    [
        pytest.param(
            put((SCHEDULER, "last_epoch"), 4), "scheduler.last_epoch is 4, progress.step is 5", id="scheduler"
        ),
        pytest.param(
            lambda state: state[HISTORY].pop(),
            "history does not hold exactly the records of steps 1..5",
            id="history-one-record-short",
        ),
        pytest.param(
            lambda state: state[HISTORY].__setitem__(4, dict(state[HISTORY][3])),
            "history does not hold exactly the records of steps 1..5",
            id="history-record-repeated",
        ),
        pytest.param(put((PROGRESS, "step"), 6), "history does not hold", id="progress-step-ahead"),
        pytest.param(
            put((OPTIMIZER, "state", 2, "step"), torch.tensor(4.0, dtype=torch.float64)),
            "optimizer.state.2.step is 4.0, progress.step is 5",
            id="optimizer-step-behind",
        ),
        pytest.param(put((OPTIMIZER, "state"), {}), "optimizer state is empty after 5 updates", id="optimizer-reset"),
        pytest.param(
            put((DATA, "cursor"), 16),
            "data position (epoch 0, cursor 16) is not where step 5 ends",
            id="data-cursor-one-batch-behind",
        ),
        pytest.param(put((DATA, "epoch"), 1), "data position (epoch 1, cursor 20)", id="data-one-epoch-ahead"),
    ],
)
def test_checkpoint_with_inconsistent_progress_is_refused(
    tmp_path: Path, state: dict[str, Any], expected: layout.Expected, tamper: Callable, problem: str
) -> None:
    tamper(state)
    assert problem in refusal(save_tampered(tmp_path, state), expected)


IDENTITY_FIELDS = [
    pytest.param(IDENTITY, "data_sha256", id="another-data-set"),
    pytest.param(IDENTITY, "code_sha256", id="another-code-version"),
    pytest.param(VERSIONS, "torch", id="another-torch"),
]


@pytest.mark.parametrize(("section", "key"), IDENTITY_FIELDS)
def test_checkpoint_from_other_data_or_code_is_refused_without_override(
    tmp_path: Path, state: dict[str, Any], expected: layout.Expected, section: str, key: str
) -> None:
    state[section][key] = "0" * 64
    message = refusal(save_tampered(tmp_path, state), expected)
    assert f"{key}: checkpoint '{'0' * 64}'" in message, message
    assert "--override-identity" in message, message


@pytest.mark.parametrize(("section", "key"), IDENTITY_FIELDS)
def test_override_accepts_other_data_or_code_and_returns_the_differences(
    tmp_path: Path, state: dict[str, Any], expected: layout.Expected, section: str, key: str
) -> None:
    state[section][key] = "0" * 64
    loaded, differences = load(save_tampered(tmp_path, state), expected, override=True)
    current = {**expected.identity, **versions()}[key]
    assert differences == [f"{key}: checkpoint {'0' * 64!r}, current {current!r}"]
    assert loaded[section][key] == "0" * 64


@pytest.mark.parametrize("override", [False, True], ids=["without-override", "with-override"])
@pytest.mark.parametrize(("key", "value", "problem"), [("lr", 0.1, "lr=0.1 (now 0.03)"), ("seed", 1, "seed=1 (now 0)")])
def test_checkpoint_of_another_experiment_is_refused_even_with_override(
    tmp_path: Path,
    state: dict[str, Any],
    expected: layout.Expected,
    override: bool,
    key: str,
    value: object,
    problem: str,
) -> None:
    state[CONFIG][key] = value
    message = refusal(save_tampered(tmp_path, state), expected, override=override)
    assert f"written by another experiment: {problem}" in message, message


@pytest.mark.parametrize(
    ("tamper", "problem"),
    [
        pytest.param(put((SCHEDULER, "gamma"), 2.0), "scheduler gamma is 2.0, this experiment has 0.5", id="gamma"),
        pytest.param(put((SCHEDULER, "step_size"), 4), "scheduler step_size is 4", id="step-size"),
        pytest.param(put((SCHEDULER, "base_lrs"), [0.1]), "scheduler base_lrs is [0.1]", id="base-lrs"),
        pytest.param(put((OPTIMIZER, "param_groups", 0, "betas"), (0.8, 0.999)), "optimizer betas", id="betas"),
        pytest.param(put((OPTIMIZER, "param_groups", 0, "initial_lr"), 0.1), "optimizer initial_lr", id="initial-lr"),
        pytest.param(put((OPTIMIZER, "param_groups", 0, "eps"), 1e-6), "optimizer eps", id="eps"),
    ],
)
def test_checkpoint_whose_hyperparameters_differ_from_a_fresh_build_is_refused(
    tmp_path: Path, state: dict[str, Any], expected: layout.Expected, tamper: Callable, problem: str
) -> None:
    tamper(state)
    message = refusal(save_tampered(tmp_path, state), expected, override=True)  # no override for these
    assert problem in message, message


# -- malformed sections and generator states are refused at load, not mid-resume -----------------


@pytest.mark.parametrize(
    "tamper",
    [
        pytest.param(put((OPTIMIZER, "param_groups"), [5]), id="param-group-not-a-dict"),
        pytest.param(put((OPTIMIZER, "state", 0), 5), id="optimizer-moments-not-a-dict"),
        pytest.param(put((CONFIG, "lr"), torch.ones(2)), id="config-value-a-tensor"),
    ],
)
def test_malformed_section_is_refused_as_checkpoint_error(
    tmp_path: Path, state: dict[str, Any], expected: layout.Expected, tamper: Callable
) -> None:
    tamper(state)
    refusal(save_tampered(tmp_path, state), expected)


@pytest.mark.parametrize(
    "tamper",
    [
        pytest.param(put((RNG, "numpy"), {"bit_generator": "PCG64"}), id="numpy-state-without-state"),
        pytest.param(put((RNG, "python"), (3, (-1,) * 625, None)), id="python-words-negative"),
        pytest.param(
            lambda state: put((RNG, "python"), (9, *state[RNG]["python"][1:]))(state), id="python-state-version-9"
        ),
        pytest.param(lambda state: state[RNG]["torch"].fill_(255), id="torch-state-garbage"),
    ],
)
def test_rng_state_that_cannot_be_restored_is_refused_at_load(
    tmp_path: Path, state: dict[str, Any], expected: layout.Expected, tamper: Callable
) -> None:
    tamper(state)
    try:  # control: resuming from it would crash after load
        float64_build(train.Experiment()).generators.restore(state[RNG])
        restorable = True
    except train.kit.ResumeproofError:
        restorable = False
    assert not restorable
    refusal(save_tampered(tmp_path, state), expected)


def test_refusal_quoting_a_large_tensor_is_still_one_line(
    tmp_path: Path, state: dict[str, Any], expected: layout.Expected
) -> None:
    state[OPTIMIZER]["state"][0]["step"] = torch.full((100,), 5.0, dtype=torch.float64)
    refusal(save_tampered(tmp_path, state), expected)


# -- train.py end to end: exit status 2, one line, nothing written ------------------------------


def damaged_copy(kind: str, interrupted_run: Path, directory: Path) -> Path:
    directory.mkdir()
    path = directory / CHECKPOINT
    raw = (interrupted_run / CHECKPOINT).read_bytes()
    shutil.copyfile(interrupted_run / SIDECAR, directory / SIDECAR)
    if kind == "truncated":
        path.write_bytes(raw[:8192])
    elif kind == "flipped-byte":
        path.write_bytes(raw[:5000] + bytes([raw[5000] ^ 0x01]) + raw[5001:])
    elif kind == "malformed-pickle":
        replace_pickle(interrupted_run / CHECKPOINT, path, b"\x80\x02a.")
        write_sidecar(path)
    return path  # "nonexistent": no file at all


@pytest.mark.parametrize(
    "kind",
    [
        "truncated",
        "flipped-byte",
        "nonexistent",
        "malformed-pickle",
    ],
)
def test_resume_from_a_bad_checkpoint_exits_2_with_one_line(tmp_path: Path, interrupted_run: Path, kind: str) -> None:
    resume = damaged_copy(kind, interrupted_run, tmp_path / "damaged")
    before = files_in(resume.parent)
    output = tmp_path / "resumed"
    proc = run_train("--steps", "1", "--output", output, "--resume", resume)
    assert proc.returncode == 2, proc.stderr
    assert str(resume) in single_error_line(proc)
    assert not output.exists()
    assert files_in(resume.parent) == before


def test_existing_output_directory_is_refused_and_left_untouched(tmp_path: Path, interrupted_run: Path) -> None:
    output = tmp_path / "existing"
    output.mkdir()
    (output / "notes.txt").write_text("earlier work\n")
    proc = run_train("--steps", "1", "--output", output, "--resume", interrupted_run / CHECKPOINT)
    assert proc.returncode == 2, proc.stderr
    line = single_error_line(proc)
    assert f"--output {output}: already exists" in line, line
    assert files_in(output) == {"notes.txt": b"earlier work\n"}
    assert [p.name for p in output.iterdir()] == ["notes.txt"]


def test_override_identity_resumes_and_marks_the_first_resumed_record(tmp_path: Path, state: dict[str, Any]) -> None:
    state[IDENTITY]["data_sha256"] = "0" * 64
    resume = save_tampered(tmp_path / "altered", state)
    output = tmp_path / "resumed"
    proc = run_train("--steps", "2", "--output", output, "--resume", resume, "--override-identity")
    assert proc.returncode == 0, proc.stderr
    history = json.loads((output / "summary.json").read_text())["history"]
    assert [record["step"] for record in history] == [1, 2, 3, 4, 5, 6, 7]
    assert ["override" in record for record in history] == [False] * 5 + [True, False]
    assert len(history[5]["override"]) == 1
    assert history[5]["override"][0].startswith(f"data_sha256: checkpoint {'0' * 64!r}, current ")
