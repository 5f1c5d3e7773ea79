"""kit.Generators on a real GPU: CUDA generators peeked on their device, every device's default generator saved as
torch.cuda.get_rng_state_all() saves them, through a weights_only round trip, and fewer devices refused."""

import io

import pytest
import torch

from resumeproof.kit.generators import CUDA, Generators, GeneratorStateError


def weights_only_round_trip(value):
    buffer = io.BytesIO()
    torch.save(value, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=True)


def cuda_generators() -> dict[str, torch.Generator]:
    return {"explicit": torch.Generator(device="cuda").manual_seed(3), "default": torch.cuda.default_generators[0]}


def test_a_cuda_generator_is_peeked_on_its_device_without_consuming_the_draw():
    torch.cuda.init()  # default_generators is filled when CUDA starts
    gens = Generators(**cuda_generators())
    peeked = gens.peek()
    for name in gens.names:
        rng = gens[name]
        assert peeked[name] == torch.rand((), generator=rng, device=rng.device, dtype=torch.float64).item(), name


def test_a_cuda_generator_state_round_trips_weights_only_and_check_restores_it_on_the_same_device():
    torch.cuda.init()
    gens = Generators(**cuda_generators())
    saved = weights_only_round_trip(gens.state())
    expected = gens.peek()
    gens.check(saved)  # into scratch generators on each generator's own device
    assert gens.peek() == expected
    for name in gens.names:
        torch.rand(7, generator=gens[name], device=gens[name].device)
    assert gens.peek() != expected
    gens.restore(saved)
    assert gens.peek() == expected


def test_the_global_cuda_generator_holds_every_devices_state_as_get_rng_state_all_does():
    gens = Generators.global_()
    assert gens.names == ("python", "numpy", "torch", CUDA)
    saved = weights_only_round_trip(gens.state())
    devices = torch.cuda.get_rng_state_all()
    assert len(saved[CUDA]) == torch.cuda.device_count() == len(devices)
    assert all(torch.equal(mine, theirs) for mine, theirs in zip(saved[CUDA], devices, strict=True))
    expected = gens.peek()[CUDA]
    assert isinstance(expected, list) and len(expected) == torch.cuda.device_count()
    for index in range(torch.cuda.device_count()):
        torch.nn.functional.dropout(torch.ones(64, device=f"cuda:{index}"), 0.5)  # draws from that device's
    assert gens.peek()[CUDA] != expected
    gens.check(saved)
    gens.restore(saved)
    assert gens.peek()[CUDA] == expected
    torch.cuda.set_rng_state_all(saved[CUDA])  # the frameworks' own restore reads the same states
    assert gens.peek()[CUDA] == expected


def test_states_of_more_cuda_devices_than_are_visible_are_refused_before_any_generator_is_touched():
    gens = Generators.global_()
    saved = gens.state()
    visible = torch.cuda.device_count()
    saved[CUDA] = [*saved[CUDA], saved[CUDA][0]]
    torch.rand(3, device="cuda")
    before = gens.peek()
    for attempt in (gens.check, gens.restore):
        with pytest.raises(GeneratorStateError, match=f"generator 'cuda': {visible + 1} CUDA devices saved, {visible}"):
            attempt(saved)
    assert gens.peek() == before
