"""Interruption points: given by the user, or inferred from the continuous run's history (epoch boundaries).

Resume bugs hide at epoch boundaries: a sampler that draws the next epoch's permutation when its
iterator is exhausted, or when the next one starts, leaves a checkpoint written right after an
epoch's last batch one draw behind or ahead. `--interrupt-at epochs` asks for every epoch
boundary within N and one mid-epoch point per epoch, without the user knowing the epoch length.

Inference reads the row ids each update consumed (`history[i].rows`): the data set is the set of
ids seen over the whole history, and an epoch ends after the update at which every id has been
seen once since the previous boundary. It needs the history to go on past its first complete
epoch (else the data set could be larger than the history shows) and a shuffle without
replacement; when an id repeats before its epoch is complete, or no epoch
completes, there is no boundary to find and the verifier says so (exit 2) instead of guessing.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from resumeproof.common.errors import ResumeproofError
from resumeproof.verify.vocabulary.findings import Coverage


class EpochError(ResumeproofError):
    """The continuous history does not show where its epochs end."""


@dataclass(frozen=True)
class Epochs:
    rows: int  # the data set's size: distinct row ids over the history
    boundaries: tuple[int, ...]  # k such that update k was the last of an epoch (1 <= k)

    def points(self, steps: int) -> tuple[int, ...]:
        """Every boundary below N, and the middle of every epoch that starts below N."""
        ends = [k for k in self.boundaries if k < steps]
        starts = [0, *ends]
        middles = []
        for i, start in enumerate(starts):
            end = ends[i] if i < len(ends) else steps
            if end - start >= 2:
                middles.append((start + end) // 2)
        return tuple(sorted({*ends, *(k for k in middles if 1 <= k < steps)}))


def infer(history: Sequence[dict[str, Any]]) -> Epochs:
    """Where the epochs of a history end, or an EpochError saying why that cannot be told."""
    ids = {row for record in history for row in record["rows"]}
    if not ids:
        raise EpochError("the continuous history consumed no rows; its epochs cannot be told")
    seen: set[int] = set()
    boundaries = []
    for record in history:
        for row in record["rows"]:
            if row in seen:
                raise EpochError(
                    f"row {row} is consumed twice before every row was seen (update {record['step']}): "
                    "not a shuffle without replacement, or the data set is larger than the history shows"
                )
            seen.add(row)
        if len(seen) == len(ids):
            boundaries.append(record["step"])
            seen = set()
    if not boundaries or boundaries[0] == history[-1]["step"]:  # the history must go on past its first epoch
        raise EpochError(f"no epoch is seen to complete within the {len(history)} updates; raise --steps")
    return Epochs(len(ids), tuple(boundaries))


def untried(history: Sequence[dict[str, Any]], tried: Sequence[int], steps: int) -> Coverage:
    """What a verification did not try: the epoch boundaries below N (when the history shows them)."""
    try:
        epochs = infer(history)
    except EpochError as err:
        return Coverage(why_unknown=str(err))
    boundaries = tuple(k for k in epochs.boundaries if k < steps)
    return Coverage(
        epoch_rows=epochs.rows,
        epoch_boundaries=boundaries,
        untried_boundaries=tuple(k for k in boundaries if k not in tried),
    )
