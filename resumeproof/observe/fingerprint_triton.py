"""pk128/1 (observe/fingerprint.py) as one fused Triton kernel: each block of words read once, both lanes mixed in
registers, one pair of partial sums per block, which fingerprint.py adds up on the device (a wrapping sum commutes,
so the blocks' shape changes nothing).

Loaded by its path, only when the observer fingerprints a CUDA tensor and `triton` imports (fingerprint.py falls
back to torch's own operations, the same algorithm, on any failure). The arithmetic is int64 as in the torch-ops
implementation: multiplies and adds wrap, and every right shift is masked to a logical one. The constants are
fingerprint.py's (GOLDEN, SEEDS, MIX) written as signed 64-bit literals, since a jitted function reads no globals.
"""

import contextlib

import torch
import triton
import triton.language as tl

BLOCK = 4096  # words per program: 32 KB read, two int64 partial sums written


@triton.jit
def _logical_right(x, shift: tl.constexpr):
    return (x >> shift) & ((1 << (64 - shift)) - 1)


@triton.jit
def _fmix(x):
    x = x ^ _logical_right(x, 30)
    x = x * -4658895280553007687  # 0xBF58476D1CE4E5B9
    x = x ^ _logical_right(x, 27)
    x = x * -7723592293110705685  # 0x94D049BB133111EB
    return x ^ _logical_right(x, 31)


@triton.jit
def _pk128_blocks(words, n, start, out, BLOCK: tl.constexpr):
    block = tl.program_id(0).to(tl.int64)
    offsets = block * BLOCK + tl.arange(0, BLOCK).to(tl.int64)
    inside = offsets < n
    w = tl.load(words + offsets, mask=inside, other=0)
    scaled = (offsets + start) * -7046029254386353131  # i * 0x9E3779B97F4A7C15
    first = tl.where(inside, _fmix(w ^ _fmix(scaled + 2611923443488327891)), 0)  # SEEDS[0] 0x243F6A8885A308D3
    second = tl.where(inside, _fmix(w ^ _fmix(scaled + 1376283091369227076)), 0)  # SEEDS[1] 0x13198A2E03707344
    tl.store(out + block * 2, tl.sum(first, axis=0))
    tl.store(out + block * 2 + 1, tl.sum(second, axis=0))


def lanes(words: torch.Tensor, start: int) -> torch.Tensor:
    """Per block of int64 `words` (the first at global index `start`), both lanes' partial sums: (blocks, 2) int64
    on the words' device, to be added up with fingerprint.wrapping_sum."""
    blocks = triton.cdiv(words.numel(), BLOCK)
    out = torch.empty((blocks, 2), dtype=torch.int64, device=words.device)
    # On the tensor's own GPU; a CPU tensor only under TRITON_INTERPRET=1 (the kernel checked without a GPU).
    with torch.cuda.device(words.device) if words.is_cuda else contextlib.nullcontext():
        _pk128_blocks[(blocks,)](words, words.numel(), start, out, BLOCK=BLOCK)
    return out
