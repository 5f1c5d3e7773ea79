"""One process's model and optimizer state dicts (kit/state_dicts.py): read plainly, and loaded part by part, a part
given as None left as built. Under torchrun, DCP's state-dict API: tests/e2e/test_distributed.py."""

import copy

import torch
from torch import nn

from resumeproof.kit.state_dicts import PLAIN, StateDicts


def built(seed: int) -> tuple[nn.Module, torch.optim.Optimizer]:
    torch.manual_seed(seed)
    model = nn.Linear(2, 1)
    return model, torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)


def test_a_part_given_as_none_is_left_as_built_and_the_other_is_loaded():
    model, optimizer = built(0)
    model(torch.ones(1, 2)).sum().backward()
    optimizer.step()
    saved_model, saved_optimizer = copy.deepcopy(PLAIN.get_state_dict(model, optimizer))
    assert type(saved_model) is dict and set(saved_model) == {"weight", "bias"}
    fresh, fresh_optimizer = built(1)
    as_built = copy.deepcopy(fresh.state_dict())
    PLAIN.set_state_dict(fresh, fresh_optimizer, model_state_dict=None, optim_state_dict=saved_optimizer)
    assert all(torch.equal(fresh.state_dict()[k], as_built[k]) for k in as_built)
    momentum = fresh_optimizer.state_dict()["state"][0]["momentum_buffer"]
    assert torch.equal(momentum, saved_optimizer["state"][0]["momentum_buffer"])
    PLAIN.set_state_dict(fresh, fresh_optimizer, model_state_dict=saved_model, optim_state_dict=None)
    assert all(torch.equal(fresh.state_dict()[k], saved_model[k]) for k in saved_model)
    assert not torch.equal(as_built["weight"], saved_model["weight"])  # so that the first check could fail


def test_set_state_dict_is_written_once_and_a_group_changes_only_how_it_loads():
    from resumeproof.kit.distributed.group import Group
    from resumeproof.kit.distributed.single import Single

    assert Single.set_state_dict is Group.set_state_dict is StateDicts.set_state_dict
    assert Group.load is not StateDicts.load and Group.get_state_dict is not StateDicts.get_state_dict


def test_set_state_dict_hands_both_parts_as_given_to_the_subclass_load():
    class Recording(StateDicts):
        def load(self, model, optimizer, model_state_dict, optim_state_dict):
            self.given = (model, optimizer, model_state_dict, optim_state_dict)

    model, optimizer = built(0)
    recording = Recording()
    recording.set_state_dict(model, optimizer, model_state_dict={"m": 1}, optim_state_dict=None)
    assert recording.given == (model, optimizer, {"m": 1}, None)
