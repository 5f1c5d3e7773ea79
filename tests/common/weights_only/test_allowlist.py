"""The weights_only allowlist (common/weights_only/allowlist.py) is torch's own: its globals, its dtypes, its legacy
storage classes, compared with the installed torch."""

import torch

from resumeproof.common.weights_only import allowlist


def test_allowlist_is_exactly_torchs_default_weights_only_allowlist() -> None:
    assert set(allowlist.ALLOWED) == set(torch._weights_only_unpickler._get_allowed_globals())


def test_dtype_table_matches_torch() -> None:
    legacy = torch.storage._dtype_to_storage_type_map()
    for name, dtype in allowlist.DTYPES.items():
        real = getattr(torch, name)
        assert dtype.itemsize == real.itemsize or not dtype.rebuild, name
        assert dtype.complex == real.is_complex, name
        if dtype.rebuild:  # quantized and sub-byte dtypes have no plain tensors here
            assert (dtype.rebuild == "v2") == (real in legacy), name
            try:
                torch.zeros(1, dtype=real).requires_grad_()
                grad = True
            except RuntimeError:
                grad = False
            assert dtype.grad == grad, name


def test_storage_classes_name_torchs_dtypes() -> None:
    legacy = {
        name: str(dtype).removeprefix("torch.") for dtype, name in torch.storage._dtype_to_storage_type_map().items()
    }
    assert {f"{prefix}Storage": dtype for prefix, dtype in allowlist.LEGACY_STORAGES.items()} == {
        name: dtype for name, dtype in legacy.items() if not name.startswith("Q")
    }
