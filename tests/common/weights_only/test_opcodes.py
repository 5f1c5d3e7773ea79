"""The opcodes the check runs (common/weights_only/opcodes.py) are torch's, less three it never needs."""

import pickle

import torch

from resumeproof.common.weights_only import allowlist, opcodes


def test_opcodes_are_a_subset_of_torchs_and_builtin_mapping_is_torchs() -> None:
    pickle_opcodes = {name for name, value in vars(pickle).items() if type(value) is bytes and len(value) == 1}
    torch_opcodes = {name for name in vars(torch._weights_only_unpickler) if name in pickle_opcodes}
    assert set(opcodes.OPCODES) <= torch_opcodes
    assert {"NEWOBJ", "EMPTY_SET", "SHORT_BINSTRING"} == torch_opcodes - set(opcodes.OPCODES)
    assert torch._utils.IMPORT_MAPPING["__builtin__"] == "builtins"
    builtins_allowed = {n.split(".")[1] for n in allowlist.ALLOWED if n.startswith("builtins.")}
    assert not {("__builtin__", name) for name in builtins_allowed} & set(torch._utils.NAME_MAPPING)
