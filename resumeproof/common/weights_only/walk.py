"""The loaded structure, walked once without recursion: tensors counted, depth bounded, cycles refused."""

from collections import Counter, OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from resumeproof.common.weights_only.errors import Refusal
from resumeproof.common.weights_only.limits import LIMITS
from resumeproof.common.weights_only.values import Size, Tensor

_SEQUENCES = (list, tuple, Size, set)
_MAPPINGS = (dict, OrderedDict, Counter)


@dataclass(frozen=True)
class Shape:
    tensors: int  # distinct tensor objects, parameters included
    depth: int  # containers nested in containers, the outermost counted


def walk(root: Any) -> Shape:
    """Depth-first, iterative; every object is visited once however often it is shared."""
    depth: dict[int, int] = {}  # finished objects
    open_: set[int] = set()  # objects on the current path: meeting one again is a cycle
    tensors: set[int] = set()
    work = [(root, False)]
    while work:
        value, finished = work.pop()
        key = id(value)
        if finished:
            open_.discard(key)
            depth[key] = 1 + max((depth.get(id(child), 0) for child in _children(value)), default=0)
            if depth[key] > LIMITS.depth:
                raise Refusal(f"containers nested more than {LIMITS.depth} deep")
            continue
        if key in depth:
            continue
        if key in open_:
            raise Refusal("a container that contains itself")
        if type(value) is Tensor:
            tensors.add(key)
        if type(value) not in _SEQUENCES and type(value) not in _MAPPINGS:
            depth[key] = 0
            continue
        open_.add(key)
        work.append((value, True))
        work.extend((child, False) for child in _children(value))
    return Shape(tensors=len(tensors), depth=depth[id(root)])


def _children(value: Any) -> Iterable[Any]:
    if type(value) in _SEQUENCES:
        return value
    if type(value) in _MAPPINGS:
        attributes = vars(value).values() if type(value) is OrderedDict else ()
        return [*value.keys(), *value.values(), *attributes]
    return ()
