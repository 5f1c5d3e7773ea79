"""The calls of allowlisted types (common/weights_only/calls.py) know torch's device types and layouts."""

import torch

from resumeproof.common.weights_only import calls


def test_device_types_and_layouts_are_torchs() -> None:
    for kind in calls.DEVICE_TYPES:
        torch.device(kind, calls.MAX_DEVICE_INDEX)  # raises if torch does not know the type
    torch.serialization._get_layout("torch.strided")  # fills the cache
    assert set(calls.LAYOUTS) == set(torch.serialization._get_layout.cache)
