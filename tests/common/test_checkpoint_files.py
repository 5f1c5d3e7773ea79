"""The kind of each file of a directory checkpoint, told from its bytes and never by loading it."""

import json
import struct

import pytest
import torch

from resumeproof.common.allowances import NONE_ALLOWED, Allowances
from resumeproof.common.checkpoint_files import SCRIPT_LOADS, classify, refusal


def safetensors_bytes() -> bytes:
    header = json.dumps({"w": {"dtype": "F64", "shape": [2], "data_offsets": [0, 16]}}).encode()
    return struct.pack("<Q", len(header)) + header + bytes(16)


@pytest.mark.parametrize(
    ("name", "make", "kind"),
    [
        ("w.safetensors", lambda path: path.write_bytes(safetensors_bytes()), "safetensors"),
        ("opt.pt", lambda path: torch.save({"lr": torch.ones(2)}, path), "torch"),
        ("rng.pt", lambda path: torch.save({"key": __import__("numpy").arange(3)}, path), "pickle"),
        ("state.json", lambda path: path.write_text('{"step": 3}'), "json"),
        ("latest", lambda path: path.write_text("checkpoint-3\n"), "text"),
        (
            "plain.pkl",
            lambda path: path.write_bytes(__import__("pickle").dumps({"a": [1, 2]}, protocol=4)),
            "plain-pickle",
        ),
        ("code.pkl", lambda path: path.write_bytes(__import__("pickle").dumps(print, protocol=4)), "pickle"),
        ("blob.bin", lambda path: path.write_bytes(bytes(range(256))), "opaque"),
    ],
)
def test_each_file_is_classified_by_its_bytes(tmp_path, name, make, kind):
    make(tmp_path / name)
    info = classify(tmp_path / name, name, "0" * 64, NONE_ALLOWED)
    assert info.kind == kind
    assert info.refused == (kind in ("pickle", "opaque"))
    if kind == "pickle":
        assert (
            info.globals and classify(tmp_path / name, name, "0" * 64, Allowances(unsafe_pickle=("*.p*",))).allowed_by
        )


@pytest.mark.parametrize(
    ("name", "content", "option"), [("rng_state.pth", print, "--allow-unsafe-pickle"), ("blob", None, "--allow-opaque")]
)
def test_a_refusal_advises_the_option_that_allows_it_only_where_that_option_is_taken(tmp_path, name, content, option):
    """`resumeproof check` and a protocol trainer's verification take --allow-*; verify --observe, which resumes from
    a script's own checkpoint as it is, refuses them: there the refusal says what is true instead."""
    path = tmp_path / name
    path.write_bytes(__import__("pickle").dumps(content, protocol=4) if content else bytes(range(256)))
    info = classify(path, name, "0" * 64, NONE_ALLOWED)
    assert refusal(info).endswith(f"allow it explicitly with {option} '{name}'")
    observed = refusal(info, advise=False)
    assert observed.startswith(f"{name}: ") and option not in observed and observed.endswith(SCRIPT_LOADS)
