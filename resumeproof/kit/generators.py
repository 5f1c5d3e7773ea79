"""Capture, restore and peek the random generators a training loop draws from, whatever their kind and device.

Supported: Python's `random` module (its global generator) and `random.Random` objects; NumPy's
legacy global (`numpy.random`), `RandomState` and `Generator` objects; `torch.Generator`s on any
device, `torch.default_generator`, `torch.cuda.default_generators[i]` and
`torch.Generator(device="cuda")` included (each is peeked on its own device); and `torch.cuda`
itself, which stands for every visible CUDA device's default generator, saved as one list of
states in device order, the way `torch.cuda.get_rng_state_all()` saves them. Frameworks
(Accelerate, Lightning, transformers) save and restore the *global* ones, so
`Generators.global_()` names those: python, numpy, torch, and cuda where CUDA is available
(part `rng-cuda`). States are kept as ints, strings, lists and tensors, so that a checkpoint
holding them loads with `torch.load(weights_only=True)`.
"""

import random
import types
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from resumeproof.common.errors import ResumeproofError

PYTHON, NUMPY, TORCH = "python", "numpy", "torch"
CUDA = "cuda"  # every visible CUDA device's default generator, one state per device (torch.cuda.get_rng_state_all)


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
        return _draw(self.rng)

    def scratch(self) -> "_Torch":
        return _Torch(torch.Generator(device=self.rng.device))


def _draw(rng: torch.Generator) -> float:
    """The next float of a torch generator, drawn on its own device (a CUDA generator refuses a CPU draw)."""
    return torch.rand((), generator=rng, device=rng.device, dtype=torch.float64).item()


@dataclass(frozen=True)
class _CudaDevices:
    """Every visible CUDA device's default generator, saved and restored through torch.cuda.get_rng_state_all()
    and set_rng_state_all(), as the frameworks do; or, for check(), scratch generators, one per visible device."""

    rng: Any  # the `torch.cuda` module
    own: tuple[torch.Generator, ...] | None = None  # scratch generators instead of the devices' default ones

    def generators(self) -> Sequence[torch.Generator]:
        if self.own is not None:
            return self.own
        torch.cuda.init()  # default_generators is filled when CUDA starts
        return torch.cuda.default_generators[: torch.cuda.device_count()]

    def state(self) -> list[torch.Tensor]:
        if self.own is not None:
            return [generator.get_state() for generator in self.own]
        return list(torch.cuda.get_rng_state_all())  # one uint8 tensor per device, copies on the CPU

    def fits(self, state: list[torch.Tensor]) -> None:
        """A list of one state per device, for no more devices than are visible."""
        if not isinstance(state, list | tuple) or not all(isinstance(s, torch.Tensor) for s in state):
            raise TypeError("expected a list of one state tensor per CUDA device (torch.cuda.get_rng_state_all)")
        visible = len(self.generators())
        if len(state) > visible:
            raise GeneratorStateError(
                f"{len(state)} CUDA devices saved, {visible} visible: refusing to restore onto fewer devices"
            )

    def restore(self, state: list[torch.Tensor]) -> None:
        self.fits(state)
        # Devices beyond the saved ones keep their state, as set_rng_state_all leaves them.
        if self.own is not None:
            for generator, saved in zip(self.own, state, strict=False):
                generator.set_state(saved)
        else:
            torch.cuda.set_rng_state_all(state)  # applied now: generators() started CUDA

    def draw(self) -> list[float]:
        return [_draw(generator) for generator in self.generators()]

    def scratch(self) -> "_CudaDevices":
        return _CudaDevices(self.rng, tuple(torch.Generator(device=g.device) for g in self.generators()))


_Kind = _Python | _NumpyLegacy | _NumpyGenerator | _Torch | _CudaDevices


def _wrap(name: str, rng: Any) -> _Kind:
    if rng is random or isinstance(rng, random.Random):
        return _Python(rng)
    if rng is np.random or isinstance(rng, np.random.RandomState):
        return _NumpyLegacy(rng)
    if isinstance(rng, np.random.Generator):
        return _NumpyGenerator(rng)
    if isinstance(rng, torch.Generator):
        return _Torch(rng)
    if rng is torch.cuda:
        return _CudaDevices(rng)
    kind = rng.__name__ if isinstance(rng, types.ModuleType) else type(rng).__name__
    raise TypeError(f"generator {name!r}: {kind} is not a generator the kit knows how to save")


def _refusing(name: str, act: Callable[[Any], None], state: Any) -> None:
    """act(state), any refusal turned into one GeneratorStateError line naming the generator."""
    try:
        act(state)
    except GeneratorStateError as err:
        raise GeneratorStateError(f"generator {name!r}: {err}") from None
    except (KeyError, TypeError, ValueError, OverflowError, RuntimeError, AttributeError) as err:
        said = " ".join(str(err).split())[:120]  # short: a state can be large, the message stays one line
        reason = f"{type(err).__name__}: {said}" if said else type(err).__name__
        raise GeneratorStateError(f"generator {name!r} refuses its saved state ({reason})") from None


class Generators:
    """Named generators: `Generators(python=random.Random(0), numpy=np.random.default_rng(0), torch=g)`."""

    def __init__(self, **named: Any) -> None:
        self._kinds = {name: _wrap(name, rng) for name, rng in named.items()}

    @classmethod
    def global_(cls) -> "Generators":
        """The process-wide generators that frameworks seed, save and restore: Python's, NumPy's legacy global,
        torch's default and, where CUDA is available, every visible device's (named `cuda`)."""
        named: dict[str, Any] = {PYTHON: random, NUMPY: np.random, TORCH: torch.default_generator}
        if torch.cuda.is_available():  # does not start CUDA; the first state() or peek() does
            named[CUDA] = torch.cuda
        return cls(**named)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._kinds)

    def __getitem__(self, name: str) -> Any:
        return self._kinds[name].rng

    def state(self) -> dict[str, Any]:
        return {name: kind.state() for name, kind in self._kinds.items()}

    def restore(self, state: Mapping[str, Any], names: Iterable[str] | None = None) -> None:
        """Restore the named generators (all by default); the others keep their current state. A missing state,
        or devices' states for more devices than are visible, is refused before any generator is touched."""
        chosen = tuple(self.names if names is None else names)
        for name in chosen:
            if name not in state:
                raise GeneratorStateError(f"no saved state for generator {name!r} (saved: {', '.join(state)})")
        for name in chosen:
            kind = self._kinds[name]
            if isinstance(kind, _CudaDevices):
                _refusing(name, kind.fits, state[name])
        for name in chosen:
            _refusing(name, self._kinds[name].restore, state[name])

    def check(self, state: Mapping[str, Any]) -> None:
        """Restore `state` into fresh generators of the same kinds: a state they would refuse is found now,
        before anything of the run is touched."""
        if set(state) != set(self.names):
            raise GeneratorStateError(f"saved generators {sorted(state)}, this run has {sorted(self.names)}")
        scratch = Generators()
        scratch._kinds = {name: kind.scratch() for name, kind in self._kinds.items()}
        scratch.restore(state)

    def peek(self) -> dict[str, float | list[float]]:
        """The next draw of each generator, taken and then undone, so the run is not disturbed; `cuda` (every
        device's) gives one draw per device."""
        saved = self.state()
        draws = {name: kind.draw() for name, kind in self._kinds.items()}
        self.restore(saved)
        return draws
