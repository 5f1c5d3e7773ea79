"""kit.Generators: capture, restore and peek any generator a loop draws from, through a weights_only round trip."""

import io
import random

import numpy as np
import pytest
import torch

from resumeproof.kit.generators import Generators, GeneratorStateError


def every_kind(seed: int) -> Generators:
    torch.manual_seed(seed)
    random.seed(seed)
    np.random.seed(seed)
    return Generators(
        python_global=random,
        python=random.Random(seed),
        numpy_global=np.random,
        numpy_legacy=np.random.RandomState(seed),
        numpy_pcg64=np.random.Generator(np.random.PCG64(seed)),
        numpy_mt19937=np.random.Generator(np.random.MT19937(seed)),
        numpy_philox=np.random.Generator(np.random.Philox(seed)),
        torch_default=torch.default_generator,
        torch_explicit=torch.Generator().manual_seed(seed),
    )


def draws(gens: Generators) -> dict[str, float]:
    """One draw from each, taken through each library's own API (not the kit's)."""
    out = {}
    for name in gens.names:
        rng = gens[name]
        if rng is random or isinstance(rng, random.Random):
            out[name] = rng.random()
        elif rng is np.random or isinstance(rng, np.random.RandomState):
            out[name] = float(rng.random_sample())
        elif isinstance(rng, np.random.Generator):
            out[name] = float(rng.random())
        else:
            out[name] = torch.rand((), generator=rng, dtype=torch.float64).item()
    return out


def weights_only_round_trip(value):
    buffer = io.BytesIO()
    torch.save(value, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=True)


def test_restore_after_a_weights_only_round_trip_replays_the_same_draws_for_every_kind():
    gens = every_kind(3)
    draws(gens)
    saved = weights_only_round_trip(gens.state())
    first = draws(gens)
    draws(gens)
    gens.restore(saved)
    assert draws(gens) == first


def test_peek_returns_the_next_draws_without_consuming_them():
    gens = every_kind(5)
    peeked = gens.peek()
    assert peeked == draws(gens)


def test_restoring_some_names_leaves_the_others_where_they_are():
    gens = every_kind(11)
    saved = gens.state()
    expected = draws(gens)
    draws(gens)
    gens.restore(saved, ["python", "torch_explicit"])
    got = draws(gens)
    assert got["python"] == expected["python"] and got["torch_explicit"] == expected["torch_explicit"]
    assert all(got[name] != expected[name] for name in gens.names if name not in ("python", "torch_explicit"))


def test_omitting_each_generator_changes_only_its_next_draw():
    gens = every_kind(11)
    saved = gens.state()
    expected = draws(gens)
    for name in gens.names:
        fresh = every_kind(11)
        draws(fresh)  # every generator moves on
        fresh.restore(saved, [other for other in gens.names if other != name])
        got = draws(fresh)
        assert got[name] != expected[name], name
        assert {k: v for k, v in got.items() if k != name} == {k: v for k, v in expected.items() if k != name}


def test_global_names_the_generators_frameworks_save(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # with CUDA, `cuda` too (test_devices.py)
    gens = Generators.global_()
    assert gens.names == ("python", "numpy", "torch")
    assert gens["python"] is random and gens["numpy"] is np.random and gens["torch"] is torch.default_generator


@pytest.mark.parametrize("thing", [object(), np.random.PCG64(0), 3])
def test_an_unknown_generator_is_refused_by_name(thing):
    with pytest.raises(TypeError, match="generator 'mine'"):
        Generators(mine=thing)


def test_a_state_the_generator_refuses_is_found_by_check_without_touching_the_run():
    gens = every_kind(1)
    state = gens.state()
    before = gens.peek()
    state["numpy_pcg64"] = {"bit_generator": "MT19937"}
    with pytest.raises(GeneratorStateError, match="generator 'numpy_pcg64' refuses its saved state"):
        gens.check(state)
    with pytest.raises(GeneratorStateError, match="saved generators"):
        gens.check({"python": state["python"]})
    assert draws(gens) == before  # check restored into scratch generators, never into the run's


def test_a_restore_missing_one_state_touches_no_generator():
    gens = every_kind(13)
    saved = gens.state()
    del saved["numpy_pcg64"]
    first = draws(gens)
    with pytest.raises(GeneratorStateError, match="no saved state for generator 'numpy_pcg64'"):
        gens.restore(saved)
    got = draws(gens)
    assert all(got[name] != first[name] for name in gens.names)  # a restored one would repeat its first draw


@pytest.mark.parametrize("device", ["cpu", torch.device("cpu")])
def test_a_torch_generator_is_peeked_and_checked_on_its_own_device(device):
    g = torch.Generator(device=device).manual_seed(7)
    gens = Generators(g=g)
    gens.check(gens.state())
    assert gens.peek() == {"g": torch.rand((), generator=g, device=g.device, dtype=torch.float64).item()}
