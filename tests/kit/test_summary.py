"""summary.json (kit/summary.py): training state as exact JSON, the protocol document checked before it is written."""

import json
import math
import struct
from collections import OrderedDict

import numpy as np
import pytest
import torch

from resumeproof import kit
from resumeproof.common import protocol
from resumeproof.kit import flags
from resumeproof.kit.summary import SummaryError


def test_float64_state_round_trips_bit_identical_through_summary_json(tmp_path):
    values = torch.tensor([0.1, 1 / 3, 2.0**-1074, 1e308, -0.0], dtype=torch.float64)
    tree = kit.to_json({"w": values})
    back = json.loads(json.dumps(tree))["w"]
    assert [struct.pack("<d", v) for v in back] == [struct.pack("<d", v) for v in values.tolist()]


def test_to_json_takes_state_dicts_arrays_and_scalars_and_stringifies_keys():
    optimizer_state = {0: {"step": torch.tensor(3.0), "exp_avg": torch.ones(2)}, 1: {}}
    tree = kit.to_json(
        OrderedDict(opt=optimizer_state, arr=np.arange(3), scalar=np.float32(0.5), t=(1, 2), dt=torch.float64, z=1 + 2j)
    )
    assert tree == {
        "opt": {"0": {"step": 3.0, "exp_avg": [1.0, 1.0]}, "1": {}},
        "arr": [0, 1, 2],
        "scalar": 0.5,
        "t": [1, 2],
        "dt": "torch.float64",
        "z": [1.0, 2.0],
    }


def test_to_json_refuses_what_has_no_exact_json_form_and_says_where():
    with pytest.raises(SummaryError, match=r"state\.model\[1\]: a object has no exact JSON form"):
        kit.to_json({"model": [1, object()]}, "state")
    with pytest.raises(SummaryError, match="collide"):
        kit.to_json({1: "a", "1": "b"})


def test_write_summary_checks_the_history_and_writes_the_protocol_document(tmp_path):
    history = [kit.record(1, [3, 1], 0.1, 2.5), kit.record(2, [0, 2], 0.1, math.nan)]
    doc = kit.write_summary(tmp_path, step=2, history=history, state={}, next={"lr": 0.1}, eval={})
    written = json.loads((tmp_path / "summary.json").read_text(), parse_constant=str)
    assert written == {**doc, "history": [history[0], {**history[1], "loss": "NaN"}]}
    assert doc["protocol"] == "resume-protocol/1"
    with pytest.raises(SummaryError, match=r"one record per update 1\.\.3"):
        kit.write_summary(tmp_path, step=3, history=history, state={}, next={"lr": 0.1}, eval={})
    with pytest.raises(SummaryError, match="next must hold the lr"):
        kit.write_summary(tmp_path, step=2, history=history, state={}, next={}, eval={})


def test_write_summary_writes_meta_as_given_nothing_from_flags_parsed_earlier(tmp_path):
    flags.parse(["--steps=1", "--output=o"], parts=("model", "data"))  # no process-wide memory of the last parse
    for meta in (None, {"omitted": []}, ["not", "an", "object"]):
        kit.write_summary(tmp_path, step=0, history=[], state={}, next={"lr": 0.1}, eval={}, meta=meta)
        assert json.loads((tmp_path / protocol.SUMMARY).read_text())["meta"] == meta
