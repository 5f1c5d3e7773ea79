"""Capture, restore and peek of the three generators."""

import io

import torch

from resumeproof.kit.rng import NAMES, Generators


def draws(gens: Generators) -> list[float]:
    return [
        gens.python.random(),
        float(gens.numpy.random()),
        torch.rand((), generator=gens.torch, dtype=torch.float64).item(),
    ]


def test_restore_replays_the_same_draws_for_every_generator():
    gens = Generators.seeded(3)
    draws(gens)
    saved = gens.state()
    first = draws(gens)
    draws(gens)
    gens.restore(saved)
    assert draws(gens) == first


def test_peek_returns_the_next_draws_without_consuming_them():
    gens = Generators.seeded(5)
    peeked = gens.peek()
    assert set(peeked) == set(NAMES)
    assert [peeked[name] for name in NAMES] == draws(gens)


def test_state_survives_a_weights_only_round_trip():
    gens = Generators.seeded(7)
    draws(gens)
    buffer = io.BytesIO()
    torch.save(gens.state(), buffer)
    buffer.seek(0)
    loaded = torch.load(buffer, weights_only=True)
    expected = draws(gens)
    fresh = Generators.seeded(0)
    fresh.restore(loaded)
    assert draws(fresh) == expected


def test_omitting_each_generator_changes_its_next_draw():
    gens = Generators.seeded(11)
    draws(gens)
    saved = gens.state()
    expected = draws(gens)
    for index, name in enumerate(NAMES):
        fresh = Generators.seeded(11)
        fresh.restore({**saved, name: Generators.seeded(11).state()[name]})
        got = draws(fresh)
        assert got[index] != expected[index], name
        assert [g for i, g in enumerate(got) if i != index] == [e for i, e in enumerate(expected) if i != index]
