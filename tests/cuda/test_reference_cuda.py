"""The reference trainer on a real GPU: `--device cuda` resumes bit-identically (`--atol 0`), with its CUDA generator a
part of its own; fp16 autocast with a GradScaler does too, and a resume that loses the scaler is caught and named
by the observer at the first resumed update.

    python -B -m pytest -n 0 tests/cuda          # on a machine with a CUDA GPU; collected nowhere else
"""

import json
import subprocess
import sys
from pathlib import Path

import torch

from tests.helpers import REPO


def verify(out: Path, precision: str, *extra: str) -> tuple[subprocess.CompletedProcess, dict, dict]:
    """verify_resume.py --atol 0 of `python -B -m resumeproof.reference --device cuda --precision PRECISION`."""
    train = f"{sys.executable} -B -m resumeproof.reference --device cuda --precision {precision}"
    argv = [sys.executable, "-B", "verify_resume.py", "--output", str(out), "--atol", "0", "--jobs", "4", *extra]
    proc = subprocess.run([*argv, "--train-cmd", train], capture_output=True, text=True, cwd=REPO, timeout=900)
    report = out / "verification.json"
    document = json.loads(report.read_text()) if report.is_file() else {}  # plain json: no jsonschema needed
    continuous = out / "continuous" / "summary.json"
    return proc, document, json.loads(continuous.read_text()) if continuous.is_file() else {}


def test_the_reference_trainer_on_the_gpu_resumes_bit_identically_with_its_cuda_generator_a_part(tmp_path):
    proc, document, continuous = verify(tmp_path / "float64", "float64", "--faults", "rng-cuda,data")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert document["tolerance"]["atol"] == 0 and document["comparison"]["full_resume"]["max_deviation"] == 0.0
    meta = continuous["meta"]
    assert meta["device"] == "cuda" and meta["gpu"]["name"] == torch.cuda.get_device_name()
    assert meta["gpu"]["deterministic"]["algorithms"] and not meta["gpu"]["deterministic"]["matmul_tf32"]
    assert "rng-cuda" in meta["parts"] and "rng-torch" not in meta["parts"] and "scaler" not in meta["parts"]
    assert set(continuous["next"]["rng"]) == {"python", "numpy", "cuda"}  # the dropout masks: the GPU's generator
    assert document["faults"]["rng-cuda"]["detected"] and document["faults"]["data"]["detected"]
    assert "gpus" not in document["environment"]  # every trajectory on this one GPU
    # the observer sees the CUDA generator (once CUDA started) and names each fault at its first resumed update
    for part in ("rng-cuda", "data"):
        diagnosis = document["faults"][part]["diagnosis"]
        assert (diagnosis["parts"], diagnosis["rule"]) == ([part], "first-update"), diagnosis


def test_fp16_with_a_gradscaler_on_the_gpu_resumes_bit_identically_and_a_lost_scaler_is_caught(tmp_path):
    proc, document, continuous = verify(tmp_path / "fp16", "fp16", "--faults", "scaler,rng-cuda")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert document["comparison"]["full_resume"]["max_deviation"] == 0.0
    assert continuous["meta"]["parts"][-1] == "scaler" and continuous["meta"]["dtype"] == "float32"
    scales = [record["scale"] for record in continuous["history"]]
    assert scales[0] == 256.0 and len(set(scales)) > 1, scales  # it changes within the run: a lost one shows
    assert continuous["state"]["scaler"]["scale"] > 0 and continuous["state"]["scaler"]["growth_interval"] == 4
    lost = document["faults"]["scaler"]
    assert lost["detected"] and lost["diagnosis"]["lost"] == "scaler", lost
    assert lost["diagnosis"]["rule"] == "first-update" and "GradScaler scale" in lost["diagnosis"]["explanation"]
    assert document["faults"]["rng-cuda"]["detected"]
