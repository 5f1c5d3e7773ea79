"""The reference trainer's command line, end to end in fresh processes: its entry points, and refused resumes.

A refused resume is exit status 2 and one line, `train.py: error: ...` naming the file, and it
writes nothing: neither the output directory nor a byte of the checkpoint it refused.
"""

import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from resumeproof.cli import DEFAULT_TRAIN_CMD
from resumeproof.common import protocol
from resumeproof.kit.layout import IDENTITY
from tests.helpers import REPO, launch, run_train, torchrun
from tests.kit._checkpoint_files import CHECKPOINT, SIDECAR, files_in, replace_pickle, save_tampered, write_sidecar


def summary(run: Path) -> dict:
    return json.loads((run / protocol.SUMMARY).read_text())


def single_error_line(proc: subprocess.CompletedProcess) -> str:
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert "Traceback" not in proc.stderr, proc.stderr
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("train.py: error:"), proc.stderr
    return lines[0]


# -- the entry points ---------------------------------------------------------------------------


def test_the_packaged_module_from_another_directory_computes_what_train_py_computes(tmp_path, interrupted_run):
    """The verifier's default command, `python -B -m resumeproof.reference`, needs no checkout: run far from it."""
    output = tmp_path / "packaged"
    argv = [*shlex.split(DEFAULT_TRAIN_CMD), "--steps", "5", "--output", str(output)]
    proc = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    packaged, script = summary(output), summary(interrupted_run)
    assert all(packaged[key] == script[key] for key in protocol.COMPARED_KEYS)
    assert packaged["meta"]["identity"] == script["meta"]["identity"]  # the same code and data, whichever entry


# -- refused resumes: exit status 2, one line, nothing written ------------------------------------


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


@pytest.mark.parametrize("kind", ["truncated", "flipped-byte", "nonexistent", "malformed-pickle"])
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


def test_override_identity_resumes_and_marks_the_first_resumed_record(tmp_path: Path, interrupted_run: Path) -> None:
    state = torch.load(interrupted_run / CHECKPOINT, map_location="cpu", weights_only=True)
    state[IDENTITY]["data_sha256"] = "0" * 64
    resume = save_tampered(tmp_path / "altered", state)
    output = tmp_path / "resumed"
    proc = run_train("--steps", "2", "--output", output, "--resume", resume, "--override-identity")
    assert proc.returncode == 0, proc.stderr
    history = summary(output)["history"]
    assert [record["step"] for record in history] == [1, 2, 3, 4, 5, 6, 7]
    assert ["override" in record for record in history] == [False] * 5 + [True, False]
    assert len(history[5]["override"]) == 1
    assert history[5]["override"][0].startswith(f"data_sha256: checkpoint {'0' * 64!r}, current ")


# -- --device and --precision: what the trainer refuses, in one line, before it writes anything -------------------


@pytest.mark.skipif(torch.cuda.is_available(), reason="here CUDA is available: tests/cuda runs the trainer on it")
def test_device_cuda_without_cuda_is_refused_in_one_line(tmp_path: Path) -> None:
    output = tmp_path / "gpu"
    proc = run_train("--steps", "1", "--output", output, "--device", "cuda")
    assert proc.returncode == 2, proc.stderr
    assert "--device cuda: CUDA is not available (torch " in single_error_line(proc)
    assert not output.exists()


@pytest.mark.parametrize(
    ("precision", "part"),
    [("float64", "scaler"), ("bf16", "scaler"), ("fp16", "rng-cuda")],
    ids=["float64-has-no-scaler", "bf16-has-no-scaler", "cpu-has-no-cuda-generator"],
)
def test_omitting_a_part_this_run_does_not_have_is_refused_naming_the_parts_it_has(
    tmp_path: Path, interrupted_run: Path, precision: str, part: str
) -> None:
    output = tmp_path / "resumed"
    resume = interrupted_run / CHECKPOINT  # refused on the flags, before the checkpoint is read
    proc = run_train("--steps", "1", "--output", output, "--resume", resume, "--precision", precision, f"--omit={part}")
    assert proc.returncode == 2, proc.stderr
    line = single_error_line(proc)
    assert f"--omit: unknown part {part}; valid parts: model, optimizer, scheduler, rng-python" in line, line
    assert ("scaler" in line.split("valid parts:")[1]) is (precision == "fp16"), line
    assert not output.exists()


def test_an_fp16_checkpoint_resumed_without_a_gradscaler_is_refused(tmp_path: Path) -> None:
    fp16 = tmp_path / "fp16"
    assert run_train("--steps", "2", "--output", fp16, "--precision", "fp16").returncode == 0
    before = files_in(fp16)
    output = tmp_path / "bf16"
    proc = run_train("--steps", "1", "--output", output, "--resume", fp16 / CHECKPOINT, "--precision", "bf16")
    assert proc.returncode == 2, proc.stderr
    assert "scaler: holds a GradScaler's state, and this run has no GradScaler" in single_error_line(proc)
    assert not output.exists() and files_in(fp16) == before


@pytest.mark.parametrize("flags", [("--device", "cuda"), ("--precision", "bf16")], ids=["cuda", "bf16"])
def test_under_torchrun_a_gpu_or_mixed_precision_is_refused_by_every_rank(tmp_path: Path, flags: tuple) -> None:
    output = tmp_path / "group"
    argv = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", "train.py"]
    proc = subprocess.run(
        [*argv, "--steps", "1", "--output", str(output), *flags], cwd=REPO, capture_output=True, text=True, timeout=180
    )
    assert proc.returncode != 0
    said = f"--device {'cuda' if 'cuda' in flags else 'cpu'} --precision {'bf16' if 'bf16' in flags else 'float64'}"
    for rank in (0, 1):
        assert f"train.py [rank {rank}]: error: {said}: torchrun runs cpu float64, no NCCL" in proc.stderr, proc.stderr
    assert not output.exists()


def test_under_a_launcher_a_flat_file_is_refused(interrupted_run, tmp_path):
    """A single process's checkpoint file resumes under torchrun (tests/e2e/test_launchers.py); a flat file does not."""
    source = tmp_path / "flat.bin"
    export = [sys.executable, "-B", "-m", "resumeproof", "flat", "export", str(interrupted_run / protocol.CHECKPOINT)]
    subprocess.run([*export, str(source)], cwd=REPO, check=True, capture_output=True)
    proc = torchrun(launch(1, "--steps", "6", "--output", str(tmp_path / "x"), "--resume-flat", str(source)))
    said = "--resume-flat: a flat file resumes one process, not a torchrun group"
    assert proc.returncode != 0 and said in proc.stderr, proc.stderr[-2000:]
    assert not (tmp_path / "x" / protocol.CHECKPOINT).exists()


@pytest.mark.parametrize("args", [(), ("--steps", "2", "--until-step", "4")])
def test_exactly_one_of_steps_and_until_step(tmp_path, args):
    proc = run_train("--output", tmp_path / "run", *args)
    assert proc.returncode == 2 and "exactly one of --steps and --until-step" in proc.stderr
