"""kit.Generators: capture, restore and peek any generator a loop draws from, through a weights_only round trip; the
CUDA devices' generators tested without a GPU, over a fake torch.cuda of CPU generators (tests/cuda/ runs them on a
real GPU)."""

import io
import random

import numpy as np
import pytest
import torch

from resumeproof.common import protocol
from resumeproof.kit.generators import CUDA, Generators, GeneratorStateError


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
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # with CUDA, `cuda` too (below)
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


# -- CUDA: a fake torch.cuda whose devices' generators are CPU generators ---------------------------------------


@pytest.fixture
def fake_cuda(monkeypatch):
    """torch.cuda with `count` visible devices whose default generators are CPU generators: the calls the kit and
    the frameworks make (is_available, device_count, init, default_generators, get/set_rng_state_all)."""

    def install(count: int) -> tuple[torch.Generator, ...]:
        devices = tuple(torch.Generator().manual_seed(100 + i) for i in range(count))

        def set_rng_state_all(states):
            for device, state in zip(devices, states, strict=False):
                device.set_state(state)

        monkeypatch.setattr(torch.cuda, "is_available", lambda: count > 0)
        monkeypatch.setattr(torch.cuda, "device_count", lambda: count)
        monkeypatch.setattr(torch.cuda, "init", lambda: None)
        monkeypatch.setattr(torch.cuda, "default_generators", devices)
        monkeypatch.setattr(torch.cuda, "get_rng_state_all", lambda: [device.get_state() for device in devices])
        monkeypatch.setattr(torch.cuda, "set_rng_state_all", set_rng_state_all)
        return devices

    return install


def next_draws(devices) -> list[float]:
    return [torch.rand((), generator=device, dtype=torch.float64).item() for device in devices]


def test_global_generators_name_every_cuda_device_cuda_where_cuda_is_available(fake_cuda):
    fake_cuda(2)
    gens = Generators.global_()
    assert gens.names == ("python", "numpy", "torch", CUDA)
    assert gens[CUDA] is torch.cuda and protocol.rng_part(CUDA) == "rng-cuda"


def test_global_generators_have_no_cuda_without_cuda(fake_cuda):
    fake_cuda(0)
    assert Generators.global_().names == ("python", "numpy", "torch")


def test_the_cuda_generator_saves_one_state_per_device_as_get_rng_state_all_does_and_loads_weights_only(fake_cuda):
    devices = fake_cuda(2)
    gens = Generators(cuda=torch.cuda)
    saved = weights_only_round_trip(gens.state())
    assert isinstance(saved[CUDA], list) and len(saved[CUDA]) == 2
    assert all(torch.equal(a, b.get_state()) for a, b in zip(saved[CUDA], devices, strict=True))
    expected = next_draws(devices)
    next_draws(devices)
    gens.restore(saved)
    assert next_draws(devices) == expected


def test_peek_gives_each_devices_next_draw_without_consuming_it(fake_cuda):
    devices = fake_cuda(2)
    gens = Generators(cuda=torch.cuda)
    peeked = gens.peek()[CUDA]
    assert isinstance(peeked, list) and len(peeked) == 2 and peeked[0] != peeked[1]
    assert next_draws(devices) == peeked


def test_restoring_onto_fewer_devices_than_were_saved_is_refused_naming_both_counts(fake_cuda):
    fake_cuda(2)
    saved = Generators.global_().state()
    devices = fake_cuda(1)
    gens = Generators.global_()
    torch.rand(3)  # the CPU generator moves on too
    before = gens.state()
    for attempt in (gens.check, gens.restore):
        with pytest.raises(GeneratorStateError) as refused:
            attempt(saved)
        message = str(refused.value)
        assert "\n" not in message and "generator 'cuda'" in message, message
        assert "2 CUDA devices saved, 1 visible" in message, message
    after = gens.state()  # refused before any generator was touched, the CPU ones included
    assert torch.equal(after["torch"], before["torch"]) and torch.equal(after[CUDA][0], devices[0].get_state())
    assert torch.equal(after[CUDA][0], before[CUDA][0])


def test_restoring_onto_more_devices_restores_the_saved_ones_and_leaves_the_others(fake_cuda):
    fake_cuda(1)
    saved = Generators(cuda=torch.cuda).state()
    devices = fake_cuda(2)
    next_draws(devices)  # every device moves on
    moved = devices[1].get_state()
    Generators(cuda=torch.cuda).restore(saved)
    assert torch.equal(devices[0].get_state(), saved[CUDA][0]) and torch.equal(devices[1].get_state(), moved)


def test_a_cuda_state_of_another_shape_is_refused_by_name(fake_cuda):
    fake_cuda(1)
    gens = Generators(cuda=torch.cuda)
    with pytest.raises(GeneratorStateError, match="generator 'cuda' refuses its saved state"):
        gens.check({CUDA: torch.get_rng_state()})  # one tensor, as a single-device save would hold


def test_generator_states_of_every_kind_and_device_stay_plain_data(fake_cuda):
    fake_cuda(2)
    gens = Generators(numpy=np.random.default_rng(0), torch=torch.Generator(), **{CUDA: torch.cuda})
    state = weights_only_round_trip(gens.state())
    gens.check(state)
