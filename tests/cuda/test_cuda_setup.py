"""configure_torch(device="cuda") and device_identity on a real GPU, each in a fresh process (CUDA starts once per
process): the cuBLAS workspace set before CUDA starts, or refused after; bit-identical float32 runs; the GPU named,
with the CUDA its driver supports; and the minimal loop on the GPU passing the verifier with every fault caught, its
verification.json checked against the schema where jsonschema is installed (skipped, saying so, where it is not).

    python -B -m pytest -n 0 tests/cuda          # on a machine with a CUDA GPU; collected nowhere else
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from resumeproof.kit import torch_setup
from tests.helpers import REPO, read_verification

pytestmark = pytest.mark.xdist_group("cuda-setup")  # the minimal loop's verification, made once

SETUP = """
import dataclasses, json, sys
import torch
from resumeproof import kit
if sys.argv[1] == "late":
    torch.zeros(1, device="cuda")  # CUDA starts before the set-up
setup = kit.configure_torch(device="cuda", dtype=torch.float32)
g = torch.Generator(device="cuda").manual_seed(0)
a = torch.randn(256, 256, device="cuda", generator=g, requires_grad=True)
images = torch.randn(8, 3, 32, 32, device="cuda", generator=g, requires_grad=True)
kernels = torch.randn(16, 3, 3, 3, device="cuda", generator=g, requires_grad=True)
loss = (a @ a).square().mean() + torch.nn.functional.conv2d(images, kernels).square().mean()  # cuBLAS, cuDNN
loss.backward()
digest = [t.detach().double().sum().item() for t in (loss, a.grad, images.grad, kernels.grad)]
print(json.dumps({"setup": dataclasses.asdict(setup), "gpu": kit.device_identity("cuda"), "digest": digest,
                  "tf32": [torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32]}))
"""


def configure(when: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != torch_setup.CUBLAS_ENV}
    return subprocess.run(
        [sys.executable, "-B", "-c", SETUP, when], capture_output=True, text=True, cwd=REPO, env=env, timeout=300
    )


def test_configure_before_cuda_starts_sets_the_cublas_workspace_and_two_processes_compute_the_same_bits():
    runs = [configure("fresh") for _ in range(2)]
    for proc in runs:
        assert proc.returncode == 0, proc.stderr[-2000:]
    first, second = (json.loads(proc.stdout) for proc in runs)
    assert first["digest"] == second["digest"]  # float32 matmul and convolution, forward and backward
    cuda = first["setup"]["cuda"]
    assert cuda["cublas_workspace_config"] == ":4096:8" and not cuda["cudnn_benchmark"] and cuda["cudnn_deterministic"]
    assert first["tf32"] == [False, False] and cuda["tf32"] is False


def test_configure_after_cuda_started_without_the_cublas_workspace_is_refused_in_one_line():
    proc = configure("late")
    assert proc.returncode != 0
    assert "CUDA started with CUBLAS_WORKSPACE_CONFIG unset" in proc.stderr, proc.stderr[-2000:]


def test_device_identity_names_this_gpu_and_the_settings_in_force():
    proc = configure("fresh")
    assert proc.returncode == 0, proc.stderr[-2000:]
    gpu = json.loads(proc.stdout)["gpu"]
    index = torch.cuda.current_device()
    major, minor = torch.cuda.get_device_capability(index)
    assert gpu["name"] == torch.cuda.get_device_name(index) and gpu["capability"] == f"{major}.{minor}"
    assert gpu["cuda"] == torch.version.cuda and gpu["cudnn"] == torch.backends.cudnn.version()
    # cuDriverGetVersion through ctypes (libcuda.so.1, nvcuda.dll): a CUDA machine has the driver's library
    assert gpu["driver_cuda"] is not None, "cuDriverGetVersion could not be read through ctypes"
    supported, built = (int(version.split(".")[0]) for version in (gpu["driver_cuda"], torch.version.cuda))
    assert supported >= built, f"the driver supports CUDA {gpu['driver_cuda']}, torch runs {torch.version.cuda}"
    assert gpu["deterministic"] == {
        "algorithms": True,
        "cudnn_deterministic": True,
        "cudnn_benchmark": False,
        "matmul_tf32": False,
        "cudnn_tf32": False,
        "cublas_workspace_config": ":4096:8",
    }


@pytest.fixture(scope="module")
def minimal_loop(tmp_path_factory) -> tuple[subprocess.CompletedProcess, Path]:
    """One verification of the minimal loop on the GPU with every fault, shared by the tests below."""
    out = tmp_path_factory.mktemp("minimal") / "verification"
    train = f"{sys.executable} -B {Path(__file__).with_name('minimal_cuda_loop.py')}"
    proc = subprocess.run(
        [sys.executable, "-B", "verify_resume.py", "--output", str(out), "--faults", "all", "--train-cmd", train],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=600,
    )
    return proc, out


def test_the_minimal_loop_on_the_gpu_resumes_exactly_and_every_fault_is_caught(minimal_loop):
    proc, out = minimal_loop
    assert proc.returncode == 0, proc.stderr[-3000:]
    document = json.loads((out / "verification.json").read_text())  # plain json: the schema is the next test's
    assert "rng-cuda" in document["faults"] and not document["blind_to"]
    meta = json.loads((out / "continuous" / "summary.json").read_text())["meta"]
    assert meta["device"] == "cuda" and meta["gpu"]["name"] == torch.cuda.get_device_name()


def test_the_minimal_loops_verification_json_follows_the_published_schema(minimal_loop):
    # A GPU machine's image may lack the dev extra; everywhere else jsonschema is a pinned dev dependency.
    pytest.importorskip(
        "jsonschema",
        reason="jsonschema is not installed: verification.json not checked against docs/verification.schema.json "
        '(install the dev extra: pip install -c constraints.txt -e ".[dev]")',
    )
    proc, out = minimal_loop
    assert proc.returncode == 0, proc.stderr[-3000:]
    read_verification(out / "verification.json")
