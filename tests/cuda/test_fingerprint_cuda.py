"""pk128/1 on a GPU: the fused Triton kernel and torch's operations on CUDA give the CPU's bits and the golden
vectors, a tensor larger than a chunk included, and a moment's digests come from the device's sums."""

import hashlib
import importlib.util

import pytest
import torch

from resumeproof.observe import fingerprint as f
from tests.observe.test_fingerprint import CASES, GOLDEN


def on_cpu(tensor: torch.Tensor) -> str:
    return f.pk128(tensor.cpu(), f.lanes_torch)


def triton_lanes(words: torch.Tensor, start: int) -> torch.Tensor:
    kernel = f._triton()
    assert kernel is not None, "triton imports but its kernel did not load"
    return f.wrapping_sum(kernel.lanes(words, start))


IMPLEMENTATIONS = {"torch operations": f.lanes_torch}
if importlib.util.find_spec("triton") is not None:  # a CUDA build of torch ships it
    IMPLEMENTATIONS["triton"] = triton_lanes
LARGE = torch.randn(2 * 2 * f.CHUNK + 3, generator=torch.Generator().manual_seed(1))  # three chunks of words


@pytest.mark.parametrize("lanes", IMPLEMENTATIONS.values(), ids=IMPLEMENTATIONS.keys())
@pytest.mark.parametrize("tensor", [*CASES.values(), LARGE], ids=[*CASES.keys(), "three chunks"])
def test_cuda_fingerprints_equal_the_cpus(tensor, lanes):
    assert f.pk128(tensor.cuda(), lanes) == on_cpu(tensor)


@pytest.mark.parametrize("lanes", IMPLEMENTATIONS.values(), ids=IMPLEMENTATIONS.keys())
@pytest.mark.parametrize(("tensor", "expected"), GOLDEN.values(), ids=GOLDEN.keys())
def test_cuda_fingerprints_match_the_golden_vectors(tensor, expected, lanes):
    assert f.pk128(tensor.cuda(), lanes) == expected


def test_a_moments_digests_are_of_the_device_fingerprints():
    tensors = [LARGE.cuda(), CASES["bfloat16, odd length"].cuda(), CASES["empty"].cuda()]
    expected = [
        hashlib.sha256(f"{t.dtype}{tuple(t.shape)}".encode() + bytes.fromhex(on_cpu(t))).hexdigest()[:32]
        for t in tensors
    ]
    assert f.digests(tensors) == expected
    assert f.digest({"w": tensors[0]}) != f.digest({"w": LARGE})  # a CPU tensor's digest is xxh3's
