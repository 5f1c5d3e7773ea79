"""A device's identity in the summary's meta (kit/identity.py), tested without a GPU: none on a CPU run, and a GPU's
name, driver, CUDA, cuDNN and determinism settings with a fake torch.cuda (configure_torch's CUDA set-up:
test_torch_setup.py; the CUDA generators: test_generators.py). tests/cuda/ runs them on a real GPU."""

import importlib
import json
import types

import pytest
import torch

from resumeproof import kit
from resumeproof.kit import torch_setup

identity = importlib.import_module("resumeproof.kit.identity")  # the module: kit.identity is its function


def test_device_identity_is_none_on_a_cpu_run():
    assert kit.device_identity("cpu") is None and kit.device_identity(torch.device("cpu")) is None


def test_device_identity_of_cuda_without_cuda_is_refused(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(kit.ResumeproofError, match="CUDA is not available"):
        kit.device_identity("cuda")


@pytest.fixture
def fake_gpu(monkeypatch, tmp_path):
    """A visible H200 as torch reports it, and the driver file of its kernel module."""
    properties = types.SimpleNamespace(name="NVIDIA H200", major=9, minor=0)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda index: properties)
    monkeypatch.setattr(torch.version, "cuda", "12.8")
    monkeypatch.setattr(torch.backends.cudnn, "version", lambda: 91002)
    monkeypatch.setattr(torch._C, "_cuda_getDriverVersion", lambda: 12080, raising=False)
    driver = tmp_path / "version"
    driver.write_text(
        "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.15  Release Build  (dvs-builder@U16)  "
        "Thu Jan 16 2025\nGCC version:  gcc version 12.3.0\n"
    )
    monkeypatch.setattr(identity, "NVIDIA_DRIVER_FILE", driver)
    monkeypatch.setenv(torch_setup.CUBLAS_ENV, ":4096:8")
    return monkeypatch


def test_device_identity_names_the_gpu_its_driver_cuda_cudnn_and_the_determinism_settings(fake_gpu):
    got = kit.device_identity("cuda:1")
    deterministic = got.pop("deterministic")
    assert got == {
        "name": "NVIDIA H200",
        "index": 1,
        "devices": 2,
        "capability": "9.0",
        "driver": "570.86.15",
        "driver_cuda": "12.8",
        "cuda": "12.8",
        "cudnn": 91002,
    }
    assert deterministic["cublas_workspace_config"] == ":4096:8"
    assert set(deterministic) == {
        "algorithms",
        "cudnn_deterministic",
        "cudnn_benchmark",
        "matmul_tf32",
        "cudnn_tf32",
        "cublas_workspace_config",
    }
    assert kit.device_identity("cuda")["index"] == 0  # the current device
    assert json.loads(json.dumps(kit.to_json(got))) == got  # plain JSON for the summary's meta


@pytest.mark.parametrize("driver_version", ["absent", "raises", 0])
def test_the_private_driver_version_call_is_guarded(fake_gpu, tmp_path, driver_version):
    if driver_version == "absent":
        fake_gpu.delattr(torch._C, "_cuda_getDriverVersion")
    elif driver_version == "raises":

        def fails():
            raise RuntimeError("no driver")

        fake_gpu.setattr(torch._C, "_cuda_getDriverVersion", fails, raising=False)
    else:
        fake_gpu.setattr(torch._C, "_cuda_getDriverVersion", lambda: driver_version, raising=False)
    fake_gpu.setattr(identity, "NVIDIA_DRIVER_FILE", tmp_path / "missing")
    got = kit.device_identity("cuda")
    assert got["driver_cuda"] is None and got["driver"] is None and got["name"] == "NVIDIA H200"
