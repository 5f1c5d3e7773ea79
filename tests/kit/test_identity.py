"""CUDA in the kit, tested without a GPU: the devices' generators (a fake torch.cuda over CPU generators) and the
GPU identity's fields (configure_torch's CUDA set-up: test_torch_setup.py). tests/cuda/ runs them on a real GPU."""

import importlib
import io
import json
import types

import numpy as np
import pytest
import torch

from resumeproof import kit
from resumeproof.common import protocol
from resumeproof.kit import torch_setup
from resumeproof.kit.generators import CUDA, Generators, GeneratorStateError

identity = importlib.import_module("resumeproof.kit.identity")  # the module: kit.identity is its function


def weights_only_round_trip(value):
    buffer = io.BytesIO()
    torch.save(value, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=True)


@pytest.fixture
def fake_cuda(monkeypatch):
    """torch.cuda with `count` visible devices whose default generators are CPU generators: the calls the kit and
    the frameworks make (is_available, device_count, init, default_generators, get/set_rng_state_all)."""

    def install(count: int) -> tuple[torch.Generator, ...]:
        devices = tuple(torch.Generator().manual_seed(100 + i) for i in range(count))

        def set_rng_state_all(states):
            for device, state in zip(devices, states, strict=False):
                device.set_state(state)

        monkeypatch.setattr(torch.cuda, "is_available", lambda: count > 0)
        monkeypatch.setattr(torch.cuda, "device_count", lambda: count)
        monkeypatch.setattr(torch.cuda, "init", lambda: None)
        monkeypatch.setattr(torch.cuda, "default_generators", devices)
        monkeypatch.setattr(torch.cuda, "get_rng_state_all", lambda: [device.get_state() for device in devices])
        monkeypatch.setattr(torch.cuda, "set_rng_state_all", set_rng_state_all)
        return devices

    return install


def next_draws(devices) -> list[float]:
    return [torch.rand((), generator=device, dtype=torch.float64).item() for device in devices]


def test_global_generators_name_every_cuda_device_cuda_where_cuda_is_available(fake_cuda):
    fake_cuda(2)
    gens = Generators.global_()
    assert gens.names == ("python", "numpy", "torch", CUDA)
    assert gens[CUDA] is torch.cuda and protocol.rng_part(CUDA) == "rng-cuda"


def test_global_generators_have_no_cuda_without_cuda(fake_cuda):
    fake_cuda(0)
    assert Generators.global_().names == ("python", "numpy", "torch")


def test_the_cuda_generator_saves_one_state_per_device_as_get_rng_state_all_does_and_loads_weights_only(fake_cuda):
    devices = fake_cuda(2)
    gens = Generators(cuda=torch.cuda)
    saved = weights_only_round_trip(gens.state())
    assert isinstance(saved[CUDA], list) and len(saved[CUDA]) == 2
    assert all(torch.equal(a, b.get_state()) for a, b in zip(saved[CUDA], devices, strict=True))
    expected = next_draws(devices)
    next_draws(devices)
    gens.restore(saved)
    assert next_draws(devices) == expected


def test_peek_gives_each_devices_next_draw_without_consuming_it(fake_cuda):
    devices = fake_cuda(2)
    gens = Generators(cuda=torch.cuda)
    peeked = gens.peek()[CUDA]
    assert isinstance(peeked, list) and len(peeked) == 2 and peeked[0] != peeked[1]
    assert next_draws(devices) == peeked


def test_restoring_onto_fewer_devices_than_were_saved_is_refused_naming_both_counts(fake_cuda):
    fake_cuda(2)
    saved = Generators.global_().state()
    devices = fake_cuda(1)
    gens = Generators.global_()
    torch.rand(3)  # the CPU generator moves on too
    before = gens.state()
    for attempt in (gens.check, gens.restore):
        with pytest.raises(GeneratorStateError) as refused:
            attempt(saved)
        message = str(refused.value)
        assert "\n" not in message and "generator 'cuda'" in message, message
        assert "2 CUDA devices saved, 1 visible" in message, message
    after = gens.state()  # refused before any generator was touched, the CPU ones included
    assert torch.equal(after["torch"], before["torch"]) and torch.equal(after[CUDA][0], devices[0].get_state())
    assert torch.equal(after[CUDA][0], before[CUDA][0])


def test_restoring_onto_more_devices_restores_the_saved_ones_and_leaves_the_others(fake_cuda):
    fake_cuda(1)
    saved = Generators(cuda=torch.cuda).state()
    devices = fake_cuda(2)
    next_draws(devices)  # every device moves on
    moved = devices[1].get_state()
    Generators(cuda=torch.cuda).restore(saved)
    assert torch.equal(devices[0].get_state(), saved[CUDA][0]) and torch.equal(devices[1].get_state(), moved)


def test_a_cuda_state_of_another_shape_is_refused_by_name(fake_cuda):
    fake_cuda(1)
    gens = Generators(cuda=torch.cuda)
    with pytest.raises(GeneratorStateError, match="generator 'cuda' refuses its saved state"):
        gens.check({CUDA: torch.get_rng_state()})  # one tensor, as a single-device save would hold


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
        "name": "NVIDIA H200", "index": 1, "devices": 2, "capability": "9.0", "driver": "570.86.15",
        "driver_cuda": "12.8", "cuda": "12.8", "cudnn": 91002,
    }  # fmt: skip
    assert deterministic["cublas_workspace_config"] == ":4096:8"
    assert set(deterministic) == {
        "algorithms", "cudnn_deterministic", "cudnn_benchmark", "matmul_tf32", "cudnn_tf32", "cublas_workspace_config",
    }  # fmt: skip
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


def test_generator_states_of_every_kind_and_device_stay_plain_data(fake_cuda):
    fake_cuda(2)
    gens = Generators(numpy=np.random.default_rng(0), torch=torch.Generator(), **{CUDA: torch.cuda})
    state = weights_only_round_trip(gens.state())
    gens.check(state)
