"""What every adapter does the same way: the parts it offers, the omitted ones kept as a careless resume leaves
them, the GradScaler offered only where the framework has one, and warnings."""

import copy
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from resumeproof.common import protocol
from resumeproof.kit.generators import Generators
from resumeproof.kit.run import Run

# The global generators the frameworks save: python, numpy, torch, and cuda where CUDA is available.
GLOBAL_GENERATORS = Generators.global_().names
# The kit's standard parts for those generators, without `progress`, which a framework's own loop keeps: on a
# machine without CUDA exactly protocol.STANDARD_PARTS without it.
STANDARD_PARTS = tuple(part for part in protocol.standard_parts(GLOBAL_GENERATORS) if part != protocol.PROGRESS)
# What an adapter's --omit accepts: the standard parts and the GradScaler, which a run without one withdraws.
PARTS = (*STANDARD_PARTS, protocol.SCALER)
NO_SCALER = "the run has no GradScaler (fp16 mixed precision on a GPU makes one)"


def omitted_generators(run: Run) -> list[str]:
    """The global generators that `--omit` names."""
    return [name for name in GLOBAL_GENERATORS if protocol.rng_part(name) in run.omit]


def restored_generators(run: Run) -> list[str]:
    """The global generators that a resume restores: those `--omit` does not name."""
    return [name for name in GLOBAL_GENERATORS if protocol.rng_part(name) not in run.omit]


def offer_scaler(run: Run, scaler: Any) -> None:
    """The scaler part exists only where the framework made a GradScaler: without one, `--omit=scaler` is refused
    and meta.parts leaves it out."""
    if scaler is None:
        run.withdraw(protocol.SCALER, NO_SCALER)


@contextmanager
def omissions_kept(run: Run, **objects: Any) -> Iterator[None]:
    """Around a framework's own restore: every omitted part (an object with state_dict/load_state_dict, or a
    global generator) is put back to what it was before, exactly as if the framework had not restored it."""
    kept = {part: thing for part, thing in objects.items() if part in run.omit}
    saved = {part: copy.deepcopy(thing.state_dict()) for part, thing in kept.items()}
    generators = Generators.global_()
    before = generators.state()
    yield
    for part, thing in kept.items():
        thing.load_state_dict(saved[part])
    generators.restore(before, omitted_generators(run))


def draws_from_globals(dataset: Any) -> bool:
    """Whether fetching one example draws from a global generator (tried on example 0, then undone)."""
    generators = Generators.global_()
    saved = generators.state()
    first = generators.peek()
    dataset[0]
    drew = generators.peek() != first
    generators.restore(saved)
    return drew


def warn(message: str) -> None:
    """One line on stderr: the verifier keeps it in the trajectory's log."""
    print(f"resumeproof: warning: {message}", file=sys.stderr)
