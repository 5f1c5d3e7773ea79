"""The files DCP writes and the only globals its `.metadata` may name (common/dcp_files.py), held to the installed
torch; the allowlist at work: tests/kit/distributed/test_dcp_io.py (the trainer) and tests/verify/run/test_accept.py
(the verifier)."""

import torch

from resumeproof.common import dcp_files


def test_the_allowlisted_dtypes_are_exactly_torchs():
    found = {str(v).removeprefix("torch.") for v in vars(torch).values() if isinstance(v, torch.dtype)}
    assert set(dcp_files.DTYPES) == found
