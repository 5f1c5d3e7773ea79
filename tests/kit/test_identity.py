"""A device's identity in the summary's meta (kit/identity.py), tested without a GPU: none on a CPU run, and a GPU's
name, driver, CUDA, cuDNN and determinism settings with a fake torch.cuda (configure_torch's CUDA set-up:
test_torch_setup.py; the CUDA generators: test_generators.py). tests/cuda/ runs them on a real GPU."""

import ctypes
import ctypes.util
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


class FakeDriver:
    """A CUDA driver library as ctypes opens it: `cuDriverGetVersion(int *)` writes `version`, returns `status`."""

    def __init__(self, version: int, status: int = 0):
        def get(pointer):
            pointer.contents.value = version
            return status

        self.cuDriverGetVersion = get


def driver_library(monkeypatch, version: int, status: int = 0) -> list[str]:
    """ctypes.CDLL answering with a FakeDriver; the names it was asked to open."""
    opened: list[str] = []

    def load(name):
        opened.append(name)
        return FakeDriver(version, status)

    monkeypatch.setattr(identity.ctypes, "CDLL", load)
    return opened


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
    driver_library(monkeypatch, 12080)
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


def test_the_cuda_driver_version_is_read_from_the_driver_library_through_ctypes(monkeypatch):
    opened = driver_library(monkeypatch, 13000)
    assert identity._driver_cuda_version() == "13.0" and opened == [identity.CUDA_DRIVER_LIBRARY]
    driver_library(monkeypatch, 12080)
    assert identity._driver_cuda_version() == "12.8"
    expected = "nvcuda.dll" if identity.sys.platform == "win32" else "libcuda.so.1"
    assert expected == identity.CUDA_DRIVER_LIBRARY


def test_a_missing_driver_library_reads_as_unknown(monkeypatch):
    monkeypatch.setattr(identity, "CUDA_DRIVER_LIBRARY", "libcuda-not-here.so.1")  # the real ctypes.CDLL fails
    assert identity._driver_cuda_version() is None


def test_a_library_without_cu_driver_get_version_reads_as_unknown(monkeypatch):
    libc = ctypes.util.find_library("c")
    if libc is None:
        pytest.skip("no C library found by name to stand in for a library without the symbol")
    monkeypatch.setattr(identity, "CUDA_DRIVER_LIBRARY", libc)  # a real library: AttributeError for the symbol
    assert identity._driver_cuda_version() is None


@pytest.mark.parametrize(("version", "status"), [(12080, 100), (0, 0), (-1, 0)], ids=["error-code", "zero", "negative"])
def test_an_error_or_a_meaningless_version_from_the_driver_reads_as_unknown(monkeypatch, version, status):
    driver_library(monkeypatch, version, status)  # 100: CUDA_ERROR_NO_DEVICE
    assert identity._driver_cuda_version() is None


@pytest.mark.parametrize("failure", [OSError, AttributeError])
def test_a_driver_that_cannot_be_opened_leaves_the_rest_of_the_identity_read(fake_gpu, tmp_path, failure):
    def fails(name):
        raise failure(f"{name}: cannot open")

    fake_gpu.setattr(identity.ctypes, "CDLL", fails)
    fake_gpu.setattr(identity, "NVIDIA_DRIVER_FILE", tmp_path / "missing")
    got = kit.device_identity("cuda")
    assert got["driver_cuda"] is None and got["driver"] is None and got["name"] == "NVIDIA H200"
