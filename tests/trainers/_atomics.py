"""A GPU's atomic adds, emulated on the CPU: a linear layer whose backward pass sums the examples' contributions
to its weight and bias gradients in an order that changes from run to run.

A GPU sums them with atomic adds (scatter, index_add, split-K matmuls) in whatever order its threads finish; in
float32 another order rounds differently in the last bits, so two runs part by ~1e-7 from some update on. Here the
order comes from the operating system (`random.SystemRandom`, os.urandom): no seeded generator is drawn from, so
nothing a checkpoint holds decides it. `ordered=True` sums in the examples' own order, and the layer is exact.

The gradients the layer takes and gives are held to fp16's range, as mixed precision's fp16 tensors hold them: beyond
65504 a value overflows to infinity, so that a GradScaler's scale grows into overflows, skips those updates and backs
off, as in fp16 training. Their precision stays float32's, so the order of the sums is the only thing that differs
between runs; and a sum overflows as a whole, never a partial sum, so no order overflows where another does not
(unless the sum lies within a rounding of 65504).

Torch only: the protocol trainer (atomics_kit.py) and the unmodified script (atomics_script.py) share it.
"""

import math
import random

import torch

BUGS = ("optimizer", "scheduler", "scaler", "ema", "rng", "data")  # what --bug PART loses on a resume, in both
FP16_MAX = 65504.0  # the largest finite float16
_OS = random.SystemRandom()


def fp16_range(t: torch.Tensor) -> torch.Tensor:
    """`t` with every value beyond fp16's largest overflowed to an infinity of its sign: fp16's range, not its
    rounding."""
    return torch.where(t.abs() > FP16_MAX, t.sign() * math.inf, t)


def summed(terms: torch.Tensor, ordered: bool) -> torch.Tensor:
    """`terms.sum(0)` added one example after another: in their order, or in one the operating system draws."""
    order = list(range(len(terms)))
    if not ordered:
        _OS.shuffle(order)
    total = terms[order[0]].clone()
    for index in order[1:]:
        total += terms[index]
    return total


class _AtomicLinear(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, ordered: bool) -> torch.Tensor:
        ctx.save_for_backward(x, weight)
        ctx.ordered = ordered
        return torch.nn.functional.linear(x, weight, bias)

    @staticmethod
    def backward(ctx, grad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, None]:
        x, weight = ctx.saved_tensors
        grad = fp16_range(grad)
        per_example = grad[:, :, None] * x[:, None, :]  # each example's outer product, as each GPU thread adds it
        weight_grad, bias_grad = summed(per_example, ctx.ordered), summed(grad, ctx.ordered)
        return fp16_range(grad @ weight), fp16_range(weight_grad), fp16_range(bias_grad), None


class Linear(torch.nn.Linear):
    """`torch.nn.Linear` (the same initial weights), with the weight and bias gradients summed as atomics do."""

    def __init__(self, inputs: int, outputs: int, *, ordered: bool) -> None:
        super().__init__(inputs, outputs)
        self.ordered = ordered

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _AtomicLinear.apply(x, self.weight, self.bias, self.ordered)
