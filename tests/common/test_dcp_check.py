"""A DCP directory checked without torch (common/dcp_check.py): `.metadata`'s structure, as DCP writes it or refused.
Its globals, storage entries and data files refused through the verifier: tests/verify/run/test_accept.py."""

import pytest

from resumeproof.common import dcp_check
from tests.helpers import dcp_saved, rewrite_metadata


def test_a_structure_dcp_never_writes_is_refused(tmp_path):
    folder = dcp_saved(tmp_path)
    rewrite_metadata(folder, lambda m: setattr(m, "state_dict_metadata", ["not", "a", "dict"]))
    with pytest.raises(dcp_check.DcpError, match="state_dict_metadata is not a dict"):
        dcp_check.read(folder)
