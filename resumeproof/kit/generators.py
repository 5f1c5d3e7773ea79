"""Capture, restore and peek the random generators a training loop draws from, whatever their kind.

Supported: Python's `random` module (its global generator) and `random.Random` objects; NumPy's
legacy global (`numpy.random`), `RandomState` and `Generator` objects; `torch.Generator`s,
`torch.default_generator` included. Frameworks (Accelerate, Lightning, transformers) save and
restore the *global* ones, so `Generators.global_()` names those three. States are kept as ints,
strings and tensors, so that a checkpoint holding them loads with `torch.load(weights_only=True)`.
"""

import random
import types
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from resumeproof.common.errors import ResumeproofError

PYTHON, NUMPY, TORCH = "python", "numpy", "torch"


class GeneratorStateError(ResumeproofError):
    """A saved generator state that the generator refuses, or one that is missing."""


def _saveable(value: Any) -> Any:
    """NumPy arrays inside a bit generator's state become lists of ints, which weights_only loads
    (and which NumPy's state setters accept back)."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, dict):
        return {key: _saveable(item) for key, item in value.items()}
    return value


@dataclass(frozen=True)
class _Python:
    rng: Any  # the `random` module or a random.Random: both offer getstate/setstate/random

    def state(self) -> tuple[Any, ...]:
        return self.rng.getstate()  # (version, 625 ints, gauss_next): plain data as it is

    def restore(self, state: tuple[Any, ...]) -> None:
        version, internal, gauss_next = state
        self.rng.setstate((version, tuple(internal), gauss_next))

    def draw(self) -> float:
        return self.rng.random()

    def scratch(self) -> "_Python":
        return _Python(random.Random())


@dataclass(frozen=True)
class _NumpyLegacy:
    rng: Any  # the `numpy.random` module (its global RandomState) or a RandomState

    def state(self) -> dict[str, Any]:
        return _saveable(self.rng.get_state(legacy=False))

    def restore(self, state: dict[str, Any]) -> None:
        self.rng.set_state(state)

    def draw(self) -> float:
        return float(self.rng.random_sample())

    def scratch(self) -> "_NumpyLegacy":
        return _NumpyLegacy(np.random.RandomState())


@dataclass(frozen=True)
class _NumpyGenerator:
    rng: np.random.Generator

    def state(self) -> dict[str, Any]:
        return _saveable(self.rng.bit_generator.state)

    def restore(self, state: dict[str, Any]) -> None:
        self.rng.bit_generator.state = state

    def draw(self) -> float:
        return float(self.rng.random())

    def scratch(self) -> "_NumpyGenerator":
        return _NumpyGenerator(np.random.Generator(type(self.rng.bit_generator)()))


@dataclass(frozen=True)
class _Torch:
    rng: torch.Generator

    def state(self) -> torch.Tensor:
        return self.rng.get_state()  # a uint8 tensor, a copy

    def restore(self, state: torch.Tensor) -> None:
        self.rng.set_state(state)

    def draw(self) -> float:
        return torch.rand((), generator=self.rng, dtype=torch.float64).item()

    def scratch(self) -> "_Torch":
        return _Torch(torch.Generator(device=self.rng.device))


_Kind = _Python | _NumpyLegacy | _NumpyGenerator | _Torch


def _wrap(name: str, rng: Any) -> _Kind:
    if rng is random or isinstance(rng, random.Random):
        return _Python(rng)
    if rng is np.random or isinstance(rng, np.random.RandomState):
        return _NumpyLegacy(rng)
    if isinstance(rng, np.random.Generator):
        return _NumpyGenerator(rng)
    if isinstance(rng, torch.Generator):
        return _Torch(rng)
    kind = rng.__name__ if isinstance(rng, types.ModuleType) else type(rng).__name__
    raise TypeError(f"generator {name!r}: {kind} is not a generator the kit knows how to save")


class Generators:
    """Named generators: `Generators(python=random.Random(0), numpy=np.random.default_rng(0), torch=g)`."""

    def __init__(self, **named: Any) -> None:
        self._kinds = {name: _wrap(name, rng) for name, rng in named.items()}

    @classmethod
    def global_(cls) -> "Generators":
        """The process-wide generators that frameworks seed, save and restore."""
        return cls(**{PYTHON: random, NUMPY: np.random, TORCH: torch.default_generator})

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._kinds)

    def __getitem__(self, name: str) -> Any:
        return self._kinds[name].rng

    def state(self) -> dict[str, Any]:
        return {name: kind.state() for name, kind in self._kinds.items()}

    def restore(self, state: Mapping[str, Any], names: Iterable[str] | None = None) -> None:
        """Restore the named generators (all by default); the others keep their current state."""
        for name in self.names if names is None else names:
            if name not in state:
                raise GeneratorStateError(f"no saved state for generator {name!r} (saved: {', '.join(state)})")
            try:
                self._kinds[name].restore(state[name])
            except (KeyError, TypeError, ValueError, OverflowError, RuntimeError, AttributeError) as err:
                said = " ".join(str(err).split())[:120]  # short: a state can be large, the message stays one line
                reason = f"{type(err).__name__}: {said}" if said else type(err).__name__
                raise GeneratorStateError(f"generator {name!r} refuses its saved state ({reason})") from None

    def check(self, state: Mapping[str, Any]) -> None:
        """Restore `state` into fresh generators of the same kinds: a state they would refuse is found now,
        before anything of the run is touched."""
        if set(state) != set(self.names):
            raise GeneratorStateError(f"saved generators {sorted(state)}, this run has {sorted(self.names)}")
        scratch = Generators()
        scratch._kinds = {name: kind.scratch() for name, kind in self._kinds.items()}
        scratch.restore(state)

    def peek(self) -> dict[str, float]:
        """The next draw of each generator, taken and then undone, so the run is not disturbed."""
        saved = self.state()
        draws = {name: kind.draw() for name, kind in self._kinds.items()}
        self.restore(saved)
        return draws
