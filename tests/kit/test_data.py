"""The shuffled order over a data set (kit/data.py): each epoch's permutation drawn when its first batch is taken, the
position saved and restored, and a saved position of another data set refused."""

import copy

import numpy as np
import pytest

from resumeproof.kit.data import OrderStateError, ShuffledOrder


def test_the_next_permutation_is_drawn_when_the_next_epoch_starts_not_when_this_one_ends():
    rng = np.random.default_rng(0)
    order = ShuffledOrder.fresh(4, rng)
    first, drawn = list(order.permutation), copy.deepcopy(rng.bit_generator.state)
    assert order.take(3, rng) == first[:3] and order.take(3, rng) == first[3:]  # the epoch's last batch is short
    assert (order.epoch, order.cursor) == (0, 4) and rng.bit_generator.state == drawn  # nothing of epoch 1 drawn
    expected = np.random.default_rng(0)
    expected.permutation(4)
    second = expected.permutation(4).tolist()
    assert order.take(2, rng) == second[:2] and (order.epoch, order.cursor, order.permutation) == (1, 2, second)


def test_a_saved_position_comes_back_and_one_of_another_data_set_is_refused_untouched():
    rng = np.random.default_rng(1)
    order = ShuffledOrder.fresh(6, rng)
    order.take(4, rng)
    state = order.state_dict()
    other = ShuffledOrder.fresh(6, np.random.default_rng(2))
    other.load_state_dict(state)
    assert (other.permutation, other.cursor, other.epoch) == (order.permutation, 4, 0)
    assert other.take(2, rng) == order.permutation[4:]
    smaller = ShuffledOrder.fresh(5, np.random.default_rng(3))
    before = (list(smaller.permutation), smaller.cursor, smaller.epoch)
    with pytest.raises(OrderStateError, match=r"data\.permutation is not a permutation of 0\.\.4"):
        smaller.load_state_dict(state)
    assert (smaller.permutation, smaller.cursor, smaller.epoch) == before
    for cursor in (7, -1, True):  # past the data set, before it, a bool
        with pytest.raises(OrderStateError, match=r"data\.cursor must be an int in 0\.\.6"):
            other.load_state_dict({**state, "cursor": cursor})
