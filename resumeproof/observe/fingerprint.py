"""The observer's digests, computed where each tensor lives: a device tensor's fingerprint on its device (pk128/1,
below), a CPU tensor's over its buffer without a copy (xxh3-128, or sha256 where `xxhash` is missing), and a
structure's (a state dict, a generator's state, a list of gradients) as a sha256 over its keys, dtypes, shapes and
the fingerprints of its tensors. A moment's device fingerprints stay on their devices until every tensor of the
moment is read, then cross to the host at once: one transfer per device and moment, a few bytes per tensor.

pk128/1, an order-aware, position-keyed 128-bit fingerprint of a tensor's bytes: the bytes (contiguous, native
little-endian) zero-padded to a multiple of 8 and read as 64-bit words w_0 .. w_{m-1}; for each lane L of two,

    h_L = sum_i fmix64(w_i XOR key_L(i)) + fmix64(nbytes XOR LENGTHS[L])   (mod 2^64)
    key_L(i) = fmix64(i * GOLDEN + SEEDS[L])                              (mod 2^64)

with fmix64 splitmix64's finalizer, and the fingerprint `h_0 h_1` as 32 hex digits. A sum of wrapping integers
commutes: the result does not depend on the order of the reduction or on how the words are chunked, so a kernel of
any shape computes the same bits. Each word is keyed by its position, so a swap of two elements or a repeated value
changes it (torch.hash_tensor's XOR of the words misses both). Not a cryptographic hash: equal fingerprints mean
equal bytes with overwhelming probability, not proof against a forger; a mismatch is always a real difference.

Loaded by its path beside observer.py (observe/site/sitecustomize.py): torch and the standard library, `xxhash`
where it imports, and observe/fingerprint_triton.py (Triton) for a CUDA tensor where `triton` imports; any failure
of that kernel falls back to torch's own integer operations, which compute the same pk128/1.
"""

import hashlib
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

try:
    import xxhash
except ImportError:  # a trainer's environment without it: sha256, slower, and recorded as such
    xxhash = None  # type: ignore[assignment]  # the module, or None where it is missing

DEVICE = "pk128/1"
CPU = "xxh3-128" if xxhash is not None else "sha256"
ALGORITHMS = {"cpu": CPU, "device": DEVICE}  # what every record says it was made with (common/observation.py)

MASK64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15  # 2^64 / the golden ratio: consecutive indices land far apart
SEEDS = (0x243F6A8885A308D3, 0x13198A2E03707344)  # one per lane: the first hex digits of pi's fraction
LENGTHS = (0xA4093822299F31D0, 0x082EFA98EC4E6C89)  # the next ones: bind the byte length (zero padding is not data)
MIX = (0xBF58476D1CE4E5B9, 0x94D049BB133111EB)  # splitmix64's finalizer's multipliers
CHUNK = 1 << 22  # words per step of the torch-ops implementation: 32 MB of each temporary
LOW32 = (1 << 32) - 1
HOST = ("cpu",)  # the device types whose tensors are hashed on the host (xxh3); every other one's by pk128/1
# A device tensor this small is hashed on the host too, copied there with the moment's other small ones at once: a
# counter that one run holds on the CPU and another on the GPU (AdamW's `step`, after a `map_location`) is one value,
# and must read as one. A larger tensor on another device reads as another value: runs place their state alike.
SMALL = 1 << 16  # bytes
_PLAIN = (int, float, bool, str, type(None))
Lanes = Callable[[torch.Tensor, int], torch.Tensor]  # (int64 words, global index of the first) -> the lanes' sums


def _signed(value: int) -> int:
    """A 64-bit constant as torch's int64 holds it (its multiply and add wrap)."""
    return value - (1 << 64) if value >= 1 << 63 else value


def fmix64(x: int) -> int:
    """splitmix64's finalizer, on Python integers (the length term, and tests' reference)."""
    x ^= x >> 30
    x = (x * MIX[0]) & MASK64
    x ^= x >> 27
    x = (x * MIX[1]) & MASK64
    return x ^ (x >> 31)


def _fmix_(x: torch.Tensor) -> torch.Tensor:
    """fmix64 in place on int64: torch's >> is arithmetic there, so each shift is masked to a logical one."""
    for shift, multiplier in ((30, MIX[0]), (27, MIX[1]), (31, None)):
        x.bitwise_xor_(x.bitwise_right_shift(shift).bitwise_and_((1 << (64 - shift)) - 1))
        if multiplier is not None:
            x.mul_(_signed(multiplier))
    return x


def wrapping_sum(x: torch.Tensor, dim: int = 0) -> torch.Tensor:
    """The sum of int64 values mod 2^64, relying on no reduction's overflow: the halves are summed apart (a sum of
    fewer than 2^31 values below 2^32 fits), then joined with an elementwise multiply and add, which wrap."""
    low = x.bitwise_and(LOW32).sum(dim)
    high = x.bitwise_right_shift(32).bitwise_and_(LOW32).sum(dim)
    return low + high * (1 << 32)


def lanes_torch(words: torch.Tensor, start: int = 0, chunk: int = CHUNK) -> torch.Tensor:
    """Both lanes' sums over int64 `words` whose first has global index `start`, with torch's integer operations on
    the words' device, `chunk` words at a time: an int64 tensor (2,) there."""
    assert 0 < chunk <= 1 << 30
    total = torch.zeros(2, dtype=torch.int64, device=words.device)
    for first in range(0, words.numel(), chunk):
        part = words[first : first + chunk]
        index = torch.arange(start + first, start + first + part.numel(), dtype=torch.int64, device=words.device)
        sums = []
        for seed in SEEDS:
            mixed = _fmix_(index.mul(_signed(GOLDEN)).add_(_signed(seed)))  # key_L(i)
            sums.append(wrapping_sum(_fmix_(mixed.bitwise_xor_(part))))
        total += torch.stack(sums)
    return total


_TRITON: list[ModuleType | None] = []  # observe/fingerprint_triton.py once tried: [] untried, [None] unavailable


def _triton() -> ModuleType | None:
    if not _TRITON:
        try:  # beside this file, by its path, as this file is loaded
            path = Path(__file__).with_name("fingerprint_triton.py")
            spec = importlib.util.spec_from_file_location(__name__ + "_triton", path)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = module  # as sitecustomize loads its modules: a jit may look its module up
            spec.loader.exec_module(module)
            _TRITON.append(module)
        except Exception:  # no triton, or one that cannot build here: torch's operations, the same algorithm
            _TRITON.append(None)
    return _TRITON[0]


def lanes(words: torch.Tensor, start: int = 0) -> torch.Tensor:
    """Both lanes' sums, by the fused Triton kernel on CUDA where it runs, else by torch's operations."""
    kernel = _triton() if words.is_cuda else None
    if kernel is not None:
        try:
            return wrapping_sum(kernel.lanes(words, start))
        except Exception:  # the kernel failed to build or run here: never again in this process
            _TRITON[0] = None
    return lanes_torch(words, start)


def _bytes(tensor: torch.Tensor) -> torch.Tensor:
    """The tensor's bytes as a flat uint8 tensor on its device: a view where it is contiguous."""
    flat = tensor.detach().resolve_conj().resolve_neg().contiguous().reshape(-1)
    return flat.view(torch.uint8)


def device_lanes(tensor: torch.Tensor, lanes_of: Lanes | None = None) -> tuple[torch.Tensor, int]:
    """pk128/1's sums over the tensor's words, on its device (the length term is the host's), and its byte length."""
    lanes_of = lanes_of or lanes
    data = _bytes(tensor)
    nbytes, body = data.numel(), data.numel() // 8
    total = torch.zeros(2, dtype=torch.int64, device=data.device)
    if body:
        try:
            words = data[: body * 8].view(torch.int64)
        except RuntimeError:  # a view starting off an 8-byte boundary (a slice of a flat buffer): one copy
            words = data[: body * 8].clone().view(torch.int64)
        total += lanes_of(words, 0)
    if nbytes % 8:
        tail = torch.zeros(8, dtype=torch.uint8, device=data.device)
        tail[: nbytes % 8] = data[body * 8 :]
        total += lanes_of(tail.view(torch.int64), body)
    return total, nbytes


def finish(sums: list[int], nbytes: int) -> bytes:
    """The 16 bytes of pk128/1 from the lanes' sums as read on the host, big-endian h_0 then h_1."""
    lanes_ = [(s + fmix64(nbytes ^ LENGTHS[lane])) & MASK64 for lane, s in enumerate(sums)]
    return b"".join(h.to_bytes(8, "big") for h in lanes_)


def pk128(tensor: torch.Tensor, lanes_of: Lanes | None = None) -> str:
    """pk128/1 of one tensor on any device, as 32 hex digits (one transfer: for tests and the reference)."""
    sums, nbytes = device_lanes(tensor, lanes_of)
    return finish(sums.tolist(), nbytes).hex()


def cpu_fingerprint(tensor: torch.Tensor) -> bytes:
    """A CPU tensor's 16 bytes: xxh3-128 over its buffer (a view, no copy, where it is contiguous), else sha256."""
    data = _bytes(tensor).numpy().data  # a memoryview of the tensor's own memory
    return xxhash.xxh3_128_digest(data) if xxhash is not None else hashlib.sha256(data).digest()[:16]


class Moment:
    """The digests of what one moment records: each value added is walked at once (CPU tensors hashed, device
    tensors' sums started on their devices), and `digests()` moves every device's sums to the host in one transfer."""

    def __init__(self) -> None:
        self.streams: list[list[bytes | int | str]] = []  # per value: bytes, a device tensor's sums by index, or
        # a small device tensor's bytes by key ("s3")
        self.pending: list[tuple[torch.Tensor, int]] = []  # (sums on the device, byte length)
        self.small: list[torch.Tensor] = []  # small device tensors' bytes, to hash on the host

    def add(self, value: Any) -> None:
        stream: list[bytes | int | str] = []
        self._feed(stream, value)
        self.streams.append(stream)

    def digests(self) -> list[str]:
        """One digest per value added, in order."""
        done: dict[int, bytes] = {}
        by_device: dict[torch.device, list[int]] = {}
        for n, (sums, _) in enumerate(self.pending):
            by_device.setdefault(sums.device, []).append(n)
        for indices in by_device.values():  # the moment's one transfer per device
            host = torch.stack([self.pending[n][0] for n in indices]).tolist()
            done |= {n: finish(row, self.pending[n][1]) for n, row in zip(indices, host, strict=True)}
        small = self._small()
        joined = (b"".join(_part(part, done, small) for part in s) for s in self.streams)
        return [hashlib.sha256(data).hexdigest()[:32] for data in joined]

    def _small(self) -> list[bytes]:
        """The small device tensors' fingerprints, as a CPU tensor's: their bytes copied at once per device."""
        by_device: dict[torch.device, list[int]] = {}
        for n, data in enumerate(self.small):
            by_device.setdefault(data.device, []).append(n)
        found: dict[int, bytes] = {}
        for indices in by_device.values():
            host = torch.cat([self.small[n] for n in indices]).cpu()
            sizes = [self.small[n].numel() for n in indices]
            found |= {n: cpu_fingerprint(part) for n, part in zip(indices, host.split(sizes), strict=True)}
        return [found[n] for n in range(len(self.small))]

    def _feed(self, out: list[bytes | int | str], value: Any) -> None:
        if isinstance(value, torch.Tensor):
            out.append(f"{value.dtype}{tuple(value.shape)}".encode())
            if value.device.type in HOST:
                out.append(cpu_fingerprint(value))
            elif value.numel() * value.element_size() <= SMALL:
                out.append(f"s{len(self.small)}")
                self.small.append(_bytes(value))
            else:
                out.append(len(self.pending))
                self.pending.append(device_lanes(value))
        elif hasattr(value, "tobytes") and hasattr(value, "dtype"):  # a NumPy array or scalar: a generator's state
            out.append(f"{value.dtype}{getattr(value, 'shape', ())}".encode() + value.tobytes())
        elif isinstance(value, dict):
            for key in sorted(value, key=str):
                out.append(repr(key).encode())
                self._feed(out, value[key])
        elif isinstance(value, list | tuple) and all(type(item) in _PLAIN for item in value):
            out.append(repr(list(value)).encode())  # a generator's state: hundreds of ints, in one piece
        elif isinstance(value, list | tuple):
            out.append(b"[")
            for item in value:
                self._feed(out, item)
            out.append(b"]")
        else:
            out.append(repr(value).encode())


def _part(part: bytes | int | str, done: dict[int, bytes], small: list[bytes]) -> bytes:
    if isinstance(part, bytes):
        return part
    return done[part] if isinstance(part, int) else small[int(part[1:])]


def digests(values: list[Any]) -> list[str]:
    """The digest of each value, with one transfer per device for them all."""
    moment = Moment()
    for value in values:
        moment.add(value)
    return moment.digests()


def digest(value: Any) -> str:
    """The digest of a tensor, array, generator state or nested structure of them (32 hex digits)."""
    return digests([value])[0]


def named(values: dict[str, Any]) -> dict[str, str]:
    """Each named value's digest, with one transfer per device for them all."""
    return dict(zip(values, digests(list(values.values())), strict=True))
