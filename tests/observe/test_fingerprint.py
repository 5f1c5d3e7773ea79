"""The observer's fingerprints: pk128/1 (a device tensor's, here computed by torch's operations on the CPU) against a
pure-Python reference and committed golden vectors, independent of how it is chunked and sensitive to what an XOR of
the words misses; a CPU tensor's xxh3-128 over its own buffer; and the structure's digest around them."""

import hashlib
import os
import subprocess
import sys

import pytest
import torch
import xxhash

from resumeproof.observe import fingerprint as f
from tests.helpers import REPO

MASK = (1 << 64) - 1


def reference(data: bytes) -> str:
    """pk128/1 as its definition reads (observe/fingerprint.py), on Python integers."""
    nbytes = len(data)
    padded = data + b"\0" * (-nbytes % 8)
    words = [int.from_bytes(padded[i : i + 8], "little") for i in range(0, len(padded), 8)]
    lanes = []
    for seed, length in zip(f.SEEDS, f.LENGTHS, strict=True):
        total = sum(f.fmix64(w ^ f.fmix64((i * f.GOLDEN + seed) & MASK)) for i, w in enumerate(words))
        lanes.append((total + f.fmix64(nbytes ^ length)) & MASK)
    return f"{lanes[0]:016x}{lanes[1]:016x}"


def raw(tensor: torch.Tensor) -> bytes:
    return tensor.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()


SEEDED = torch.Generator().manual_seed(0)
CASES = {
    "float32, odd length": torch.randn(37, generator=SEEDED),
    "float64": torch.randn(6, 5, dtype=torch.float64, generator=SEEDED),
    "bfloat16, odd length": torch.randn(13, generator=SEEDED).to(torch.bfloat16),
    "int8, odd length": torch.randint(-128, 127, (11,), dtype=torch.int8, generator=SEEDED),
    "bool": torch.tensor([True, False, True, True, False]),
    "empty": torch.zeros(0),
    "non-contiguous": torch.randn(5, 7, generator=SEEDED).t()[1:, ::2],
    "4 bytes into its storage": torch.randn(12, generator=SEEDED)[1:],  # no int64 view: one copy
    "0-d": torch.tensor(3.25),
    "longer than a chunk": torch.randn(1000, generator=SEEDED),
}


@pytest.mark.parametrize("tensor", CASES.values(), ids=CASES.keys())
def test_torch_operations_compute_the_reference_pk128(tensor):
    assert f.pk128(tensor) == reference(raw(tensor))


GOLDEN = {  # committed once: a change of constants, byte order or padding shows here
    "empty": (torch.zeros(0, dtype=torch.uint8), "8aad5d95d1c4ac924ccb4e00eb629567"),
    "int8 0..12": (torch.arange(13, dtype=torch.int8), "429b8ddac6ad622ab688eecefd01818c"),
    "float32 0..9": (torch.arange(10, dtype=torch.float32), "26d7b31495710665e85314f838370ac9"),
    "bfloat16 ones x7": (torch.ones(7, dtype=torch.bfloat16), "1f8458dbfe64174c5bd3a63a107b2c1b"),
    "float64 1.5, 0-d": (torch.tensor(1.5, dtype=torch.float64), "c47426f298d70eb5a8dca254c1f1a8d3"),
}


@pytest.mark.parametrize(("tensor", "expected"), GOLDEN.values(), ids=GOLDEN.keys())
def test_pk128_matches_its_golden_vectors(tensor, expected):
    assert reference(raw(tensor)) == expected
    assert f.pk128(tensor) == expected


@pytest.mark.parametrize("chunk", [1, 3, 8, 1000, f.CHUNK])
def test_pk128_does_not_depend_on_how_the_words_are_chunked(chunk):
    tensor = CASES["longer than a chunk"]
    assert f.pk128(tensor, lambda words, start: f.lanes_torch(words, start, chunk)) == f.pk128(tensor)


def xor_of_words(tensor: torch.Tensor) -> int:
    """What torch.hash_tensor computes: an XOR of the words, blind to their order and to pairs."""
    words = raw(tensor) + b"\0" * (-tensor.numel() * tensor.element_size() % 8)
    found = 0
    for i in range(0, len(words), 8):
        found ^= int.from_bytes(words[i : i + 8], "little")
    return found


def test_a_swap_of_two_elements_changes_pk128_where_an_xor_does_not():
    tensor = torch.arange(8, dtype=torch.float64)
    swapped = tensor[[1, 0, *range(2, 8)]]
    assert xor_of_words(tensor) == xor_of_words(swapped)
    assert f.pk128(tensor) != f.pk128(swapped)


def test_repeated_values_change_pk128_where_an_xor_does_not():
    twice_one, twice_two = torch.tensor([1.0, 1.0], dtype=torch.float64), torch.tensor([2.0, 2.0], dtype=torch.float64)
    assert xor_of_words(twice_one) == xor_of_words(twice_two) == 0
    assert f.pk128(twice_one) != f.pk128(twice_two)


def test_the_byte_length_is_bound_so_zero_padding_is_not_data():
    assert f.pk128(torch.zeros(3, dtype=torch.uint8)) != f.pk128(torch.zeros(8, dtype=torch.uint8))


def test_a_cpu_tensor_is_hashed_by_xxh3_over_its_own_buffer():
    assert f.CPU == "xxh3-128" and f.ALGORITHMS == {"cpu": "xxh3-128", "device": "pk128/1"}
    for tensor in CASES.values():
        assert f.cpu_fingerprint(tensor) == xxhash.xxh3_128_digest(raw(tensor))
    weights = torch.randn(64, 64)
    assert f._bytes(weights).data_ptr() == weights.data_ptr()  # a view: no copy of a contiguous tensor


def test_a_digest_binds_dtype_shape_and_structure():
    data = torch.arange(6, dtype=torch.int32)
    assert f.digest(data) != f.digest(data.reshape(2, 3)) != f.digest(data.view(torch.float32))
    assert f.digest({"a": data}) != f.digest({"b": data}) != f.digest([data])
    assert f.digests([data, {"a": data}]) == [f.digest(data), f.digest({"a": data})]
    assert f.named({"x": data, "y": data + 1}) == {"x": f.digest(data), "y": f.digest(data + 1)}


NO_XXHASH = """
import sys
sys.modules["xxhash"] = None  # a trainer's environment without it
import torch
from resumeproof.observe import fingerprint as f
tensor = torch.arange(10, dtype=torch.float32)
import hashlib
assert f.ALGORITHMS == {"cpu": "sha256", "device": "pk128/1"}, f.ALGORITHMS
assert f.cpu_fingerprint(tensor) == hashlib.sha256(tensor.numpy().tobytes()).digest()[:16]
print(f.digest({"w": tensor}))
"""


def test_without_xxhash_a_cpu_tensor_is_hashed_by_sha256_and_says_so():
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-B", "-c", NO_XXHASH], env=env, capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    assert len(proc.stdout.strip()) == 32


def test_device_sums_are_added_on_the_host_with_the_length_term():
    """The device's side of a moment (sums, byte length) finished on the host gives the same bytes as pk128."""
    tensor = CASES["int8, odd length"]
    sums, nbytes = f.device_lanes(tensor)
    assert nbytes == 11 and sums.dtype == torch.int64 and sums.shape == (2,)
    assert f.finish(sums.tolist(), nbytes).hex() == reference(raw(tensor))


def test_a_moment_fingerprints_device_tensors_by_pk128_and_reads_their_sums_once(monkeypatch):
    """The device path, run on the CPU: every tensor's sums are read in one transfer, and each digest is the sha256
    of its dtype, shape and pk128/1 fingerprint."""
    monkeypatch.setattr(f, "HOST", ())
    monkeypatch.setattr(f, "SMALL", -1)  # none small: every tensor by pk128/1
    reads = []
    stack = torch.stack
    monkeypatch.setattr(torch, "stack", lambda tensors, *a, **k: reads.append(len(tensors)) or stack(tensors, *a, **k))
    tensors = [CASES["float32, odd length"], CASES["int8, odd length"], CASES["empty"]]
    found = f.digests([*tensors, {"w": tensors[0]}])
    expected = [f"{t.dtype}{tuple(t.shape)}".encode() + bytes.fromhex(reference(raw(t))) for t in tensors]
    assert found[:3] == [hashlib.sha256(data).hexdigest()[:32] for data in expected]
    assert reads[-1] == 4  # one stack of four tensors' sums, moved to the host at once


def test_a_small_device_tensor_reads_as_the_same_value_on_the_cpu(monkeypatch):
    """AdamW's `step` on the GPU after a `map_location`, on the CPU in the run that never saved: one value, one
    digest. The device path, run on the CPU: a tensor under SMALL bytes is copied to the host with the moment's
    other small ones at once and hashed there; a larger one is fingerprinted by pk128/1 on its device."""
    step, large = torch.tensor(5.0), torch.arange(f.SMALL, dtype=torch.float32)
    on_the_host = f.digests([{"step": step}, large])
    monkeypatch.setattr(f, "HOST", ())
    copies = []
    cat = torch.cat
    monkeypatch.setattr(torch, "cat", lambda tensors, *a, **k: copies.append(len(tensors)) or cat(tensors, *a, **k))
    on_a_device = f.digests([{"step": step}, large, torch.ones(3)])
    assert on_a_device[0] == on_the_host[0] and on_a_device[1] != on_the_host[1]
    assert copies == [2]  # the two small tensors, copied at once
