"""What every adapter does the same way: keep the omitted parts as a careless resume leaves them, and warn."""

import copy
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from resumeproof.kit.generators import Generators
from resumeproof.kit.run import ProtocolRun

STANDARD_PARTS = ("model", "optimizer", "scheduler", "data", "rng-python", "rng-numpy", "rng-torch")


def omitted_generators(run: ProtocolRun) -> list[str]:
    """The global generators (python, numpy, torch) that `--omit` names."""
    return [name for name in Generators.global_().names if f"rng-{name}" in run.omit]


def restored_generators(run: ProtocolRun) -> list[str]:
    """The global generators (python, numpy, torch) that a resume restores: those `--omit` does not name."""
    return [name for name in Generators.global_().names if f"rng-{name}" not in run.omit]


@contextmanager
def omissions_kept(run: ProtocolRun, **objects: Any) -> Iterator[None]:
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
