"""The protocol's vocabulary (common/protocol.py): JSON that keeps every float64 bit, the generators' part names, the
standard parts in the fault matrix's order, and --omit as one token."""

import argparse
import json
import math
import struct

import pytest

from resumeproof.common import protocol


def test_dumps_keeps_every_float64_bit_and_the_values_json_has_no_word_for():
    values = [0.1, 1 / 3, 2.0**-1074, 1.7976931348623157e308, -0.0, math.inf, -math.inf]
    back = json.loads(protocol.dumps({"v": values, "nan": math.nan}))
    assert [struct.pack("<d", v) for v in back["v"]] == [struct.pack("<d", v) for v in values]
    assert math.isnan(back["nan"])


def test_a_generator_and_its_part_name_map_to_each_other():
    assert protocol.rng_part("numpy") == "rng-numpy" and protocol.generator_of("rng-numpy") == "numpy"
    assert protocol.generator_of("model") is None
    generators = [protocol.generator_of(part) for part in protocol.STANDARD_PARTS]
    assert [g for g in generators if g is not None] == list(protocol.STANDARD_GENERATORS)


def test_the_standard_parts_name_one_rng_part_per_generator_in_the_fault_matrixs_order():
    parts = ("model", "optimizer", "scheduler", "rng-python", "rng-cuda", "data", "progress")
    assert protocol.standard_parts(("python", "cuda")) == parts


def test_omit_is_one_token_that_a_parser_without_it_refuses_rather_than_reading_another_flag():
    assert protocol.omit_token("model") == "--omit=model"
    parser = argparse.ArgumentParser(exit_on_error=False)
    parser.add_argument(protocol.OMIT_RNG_FLAG, action="store_true")
    assert parser.parse_args([protocol.OMIT_FLAG]).omit_rng_restore  # a bare --omit: an abbreviation, another fault
    with pytest.raises(argparse.ArgumentError, match="ignored explicit argument 'model'"):
        parser.parse_args([protocol.omit_token("model")])
