"""Capture, restore and peek the three random generators the trainer draws from.

Python's `random.Random` (input gain), a NumPy `Generator(PCG64)` (input noise, epoch
permutations) and PyTorch's default CPU generator (weight init, dropout masks: `nn.Dropout`
draws from it and takes no generator argument). States are kept as ints, strings and tensors
so that a checkpoint holding them loads with `torch.load(..., weights_only=True)`.
"""

import random
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

PYTHON, NUMPY, TORCH = "python", "numpy", "torch"
NAMES = (PYTHON, NUMPY, TORCH)


@dataclass(frozen=True)
class Generators:
    python: random.Random
    numpy: np.random.Generator
    torch: torch.Generator

    @classmethod
    def seeded(cls, seed: int) -> "Generators":
        torch.manual_seed(seed)
        return cls(random.Random(seed), np.random.Generator(np.random.PCG64(seed)), torch.default_generator)

    @classmethod
    def scratch(cls) -> "Generators":
        """Generators of their own, torch's default untouched: somewhere to try a state first."""
        return cls(random.Random(), np.random.Generator(np.random.PCG64()), torch.Generator())

    def state(self) -> dict[str, Any]:
        version, internal, gauss_next = self.python.getstate()
        return {
            PYTHON: {
                "version": version,
                "internal": torch.tensor(internal, dtype=torch.int64),  # 625 uint32 words
                "gauss_next": gauss_next,
            },
            NUMPY: self.numpy.bit_generator.state,  # plain dict of str and (128-bit) int
            TORCH: self.torch.get_state(),  # uint8 tensor, a copy
        }

    def restore(self, state: dict[str, Any], names: Iterable[str] = NAMES) -> None:
        """Restore the named generators (all by default); the others keep their current state."""
        names = set(names)
        if PYTHON in names:
            py = state[PYTHON]
            self.python.setstate((py["version"], tuple(py["internal"].tolist()), py["gauss_next"]))
        if NUMPY in names:
            self.numpy.bit_generator.state = state[NUMPY]
        if TORCH in names:
            self.torch.set_state(state[TORCH])

    def peek(self) -> dict[str, float]:
        """The next draw of each generator, taken and then undone, so the run is not disturbed."""
        saved = self.state()
        draws = {
            PYTHON: self.python.random(),
            NUMPY: float(self.numpy.random()),
            TORCH: torch.rand((), generator=self.torch, dtype=torch.float64).item(),
        }
        self.restore(saved)
        return draws
