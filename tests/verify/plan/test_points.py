"""Interruption points: the epochs of a history, read off its row ids (the coverage a verification reports
is held end to end in tests/verify/judge/summaries/test_diagnosis.py)."""

import pytest

from resumeproof.verify.plan import points


def history(rows_per_update: list[list[int]]) -> list[dict]:
    return [{"step": i + 1, "rows": rows} for i, rows in enumerate(rows_per_update)]


def test_epochs_are_where_every_row_has_been_seen_once():
    perm = [[0, 5], [3, 1], [4, 2], [2, 0], [1, 5]]  # 6 rows, batch 2: an epoch is 3 updates
    epochs = points.infer(history(perm))
    assert (epochs.rows, epochs.boundaries) == (6, (3,))
    assert epochs.points(5) == (1, 3, 4)  # the boundary, and the middle of each epoch


@pytest.mark.parametrize(
    ("rows", "why"),
    [
        ([[0, 1], [2, 3]], "no epoch is seen to complete"),  # the history may be shorter than an epoch
        ([[0, 1], [1, 2], [0, 2]], "consumed twice"),  # not a shuffle without replacement
        ([[], []], "consumed no rows"),
    ],
)
def test_epochs_that_cannot_be_told_are_refused_with_the_reason(rows, why):
    with pytest.raises(points.EpochError, match=why):
        points.infer(history(rows))
