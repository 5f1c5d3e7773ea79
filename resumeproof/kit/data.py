"""A resumable shuffled order over a data set: the epoch's permutation and the position inside it.

It follows torch's Stateful protocol (`state_dict` / `load_state_dict`), like a model or optimizer.

The position is state like any other: a resume that restores the weights but starts the epoch
over feeds the model other rows. Each epoch's permutation is drawn lazily, when the first batch
of that epoch is taken, so a checkpoint written right after an epoch's last batch holds no draw
that belongs to the next update.
"""

from dataclasses import dataclass
from typing import Any, TypeGuard

import numpy as np
import torch

from resumeproof.common.errors import ResumeproofError


class OrderStateError(ResumeproofError):
    """A saved data position that does not describe this data set."""


@dataclass
class ShuffledOrder:
    rows: int  # data set size
    permutation: list[int]  # the current epoch's order
    cursor: int = 0  # rows of the current epoch already taken
    epoch: int = 0

    @classmethod
    def fresh(cls, rows: int, rng: np.random.Generator) -> "ShuffledOrder":
        return cls(rows, rng.permutation(rows).tolist())

    def take(self, batch: int, rng: np.random.Generator) -> list[int]:
        """The row ids of the next batch (the same on every process that shares `rng`'s stream)."""
        if self.cursor == self.rows:
            self.permutation, self.epoch, self.cursor = rng.permutation(self.rows).tolist(), self.epoch + 1, 0
        rows = self.permutation[self.cursor : self.cursor + batch]
        self.cursor += len(rows)
        return rows

    def state_dict(self) -> dict[str, Any]:
        return {
            "permutation": torch.tensor(self.permutation, dtype=torch.int64),
            "cursor": self.cursor,
            "epoch": self.epoch,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.check(state)
        self.permutation, self.cursor, self.epoch = state["permutation"].tolist(), state["cursor"], state["epoch"]

    def check(self, state: Any) -> None:
        """A permutation of this data set's rows, a cursor inside it and an epoch count, or a refusal."""
        if not isinstance(state, dict):
            raise OrderStateError(f"data position is a {type(state).__name__}, expected a dict")
        permutation, cursor, epoch = state.get("permutation"), state.get("cursor"), state.get("epoch")
        if not (isinstance(permutation, torch.Tensor) and permutation.dtype == torch.int64):
            raise OrderStateError("data.permutation must be an int64 tensor")
        if sorted(permutation.tolist()) != list(range(self.rows)):
            raise OrderStateError(f"data.permutation is not a permutation of 0..{self.rows - 1}")
        if not (is_int(cursor) and 0 <= cursor <= self.rows and is_int(epoch) and epoch >= 0):
            raise OrderStateError(f"data.cursor must be an int in 0..{self.rows} and data.epoch an int >= 0")


def is_int(value: Any) -> TypeGuard[int]:
    """An int, and not a bool (which is one to Python, never to a checkpoint's counters)."""
    return isinstance(value, int) and not isinstance(value, bool)
