"""What a file may cost the check: work units spent, and the depth and hashing cost of every tuple made.

Hashing a tuple hashes everything in it, recursively and without a recursion guard in CPython,
and is not cached; so a tuple's nesting depth is bounded when it is made, and each use of a
tuple as a key or set element is paid for by its size. Tuples are immutable, so both figures are
exact when the tuple is made. Lists and dicts are unhashable and need no such account.
"""

from resumeproof.common.weights_only.errors import Refusal
from resumeproof.common.weights_only.limits import LIMITS
from resumeproof.common.weights_only.values import Size


class Budget:
    def __init__(self) -> None:
        self.work = 0
        self.tuples: dict[int, tuple[int, int]] = {}  # id -> (nesting depth, cost of hashing it)
        self.alive: list[tuple] = []  # keeps every tuple in `tuples` alive, so that no id is reused

    def spend(self, work: int) -> None:
        self.work += work
        if self.work > LIMITS.work:
            raise Refusal(f"more than {LIMITS.work} units of work (opcodes, copies, hashing): refused as a bomb")

    def hash_cost(self, key: object) -> int:
        return self.tuples[id(key)][1] if type(key) in (tuple, Size) else 1

    def made_tuple(self, value: tuple) -> None:
        depth, cost = 1, 1
        for item in value:
            if type(item) in (tuple, Size):
                item_depth, item_cost = self.tuples[id(item)]
                depth, cost = max(depth, item_depth + 1), min(cost + item_cost, LIMITS.work + 1)
            else:
                cost += 1
        if depth > LIMITS.depth:
            raise Refusal(f"tuples nested more than {LIMITS.depth} deep")
        self.tuples[id(value)] = (depth, cost)
        self.alive.append(value)
