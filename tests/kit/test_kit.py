"""The trainer kit's public pieces: protocol flags, exact JSON of training state, summary.json, the minimal loop."""

import argparse
import json
import math
import re
import struct
from collections import OrderedDict
from pathlib import Path

import click
import numpy as np
import pytest
import torch
from click.testing import CliRunner

from resumeproof import kit
from resumeproof.kit.flags import FlagError
from resumeproof.kit.summary import SummaryError
from tests.helpers import REPO, run_verify

PARTS = ("model", "optimizer", "rng-python", "rng-torch", "data")


# -- flags --------------------------------------------------------------------------------------


def test_argparse_flags_give_the_protocol_args():
    args = kit.flags.parse(["--steps", "5", "--output", "o", "--resume", "c.pt", "--omit", "model,data"], parts=PARTS)
    assert args == kit.ProtocolArgs(steps=5, output=Path("o"), resume=Path("c.pt"), omit=frozenset({"model", "data"}))


def test_omit_rng_restore_names_every_rng_part():
    args = kit.flags.parse(["--steps", "1", "--output", "o", "--resume", "c", "--omit-rng-restore"], parts=PARTS)
    assert args.omit == {"rng-python", "rng-torch"}


def test_an_abbreviated_flag_is_never_taken_for_another(capsys):
    # argparse's default would read --omit as --omit-rng-restore; the kit's parser refuses abbreviations.
    with pytest.raises(SystemExit) as caught:
        kit.flags.parse(["--steps", "1", "--output", "o", "--resume", "c", "--omit-rng"], parts=PARTS)
    assert caught.value.code == 2
    assert "unrecognized arguments: --omit-rng" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "problem"),
    [
        (["--steps", "1", "--output", "o", "--omit", "model"], "need --resume"),
        (["--steps", "1", "--output", "o", "--resume", "c", "--omit", "weights"], "unknown part weights"),
        (["--output", "o"], "--steps is required"),
    ],
)
def test_flags_that_do_not_make_sense_are_refused_with_exit_2(capsys, argv, problem):
    with pytest.raises(SystemExit) as caught:
        kit.flags.parse(argv, parts=PARTS)
    assert caught.value.code == 2 and problem in capsys.readouterr().err


def test_the_same_flags_inside_a_users_own_argparse_parser():
    parser = argparse.ArgumentParser(allow_abbrev=False)
    parser.add_argument("--config")
    kit.flags.add_arguments(parser, PARTS, long_runs=True)
    namespace = parser.parse_args(["--config", "x.toml", "--until-step", "9", "--output", "o", "--resume", "auto"])
    args = kit.flags.from_namespace(namespace, PARTS)
    assert (args.until_step, args.resume_auto, args.resume, args.updates_from(4)) == (9, True, None, 5)
    with pytest.raises(FlagError, match="already at step 12"):
        args.updates_from(12)


def test_click_options_hand_the_command_one_protocol_args():
    seen = []

    @click.command()
    @kit.flags.click_options(PARTS)
    @click.option("--seed", type=int, default=0)
    def command(protocol: kit.ProtocolArgs, seed: int) -> None:
        seen.append((protocol, seed))

    result = CliRunner().invoke(command, ["--steps", "3", "--output", "o", "--seed", "7"])
    assert result.exit_code == 0, result.output
    assert seen == [(kit.ProtocolArgs(steps=3, output=Path("o")), 7)]
    refused = CliRunner().invoke(command, ["--steps", "3", "--output", "o", "--omit", "model"])
    assert refused.exit_code == 2 and "need --resume" in refused.output


# -- to_json and summary.json ---------------------------------------------------------------------


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
        "arr": [0, 1, 2], "scalar": 0.5, "t": [1, 2], "dt": "torch.float64", "z": [1.0, 2.0],
    }  # fmt: skip


def test_to_json_refuses_what_has_no_exact_json_form_and_says_where():
    with pytest.raises(SummaryError, match=r"state\.model\[1\]: a object has no exact JSON form"):
        kit.to_json({"model": [1, object()]}, "state")
    with pytest.raises(SummaryError, match="collide"):
        kit.to_json({1: "a", "1": "b"})


def test_write_summary_checks_the_history_and_writes_the_protocol_document(tmp_path):
    history = [kit.record(1, [3, 1], 0.1, 2.5), kit.record(2, [0, 2], 0.1, math.nan)]
    doc = kit.write_summary(tmp_path, step=2, history=history, state={}, next={"lr": 0.1}, eval={})
    assert json.loads((tmp_path / "summary.json").read_text(), parse_constant=str) == {**doc, "history": [
        history[0], {**history[1], "loss": "NaN"}
    ]}  # fmt: skip
    assert doc["protocol"] == "resume-protocol/1"
    with pytest.raises(SummaryError, match=r"one record per update 1\.\.3"):
        kit.write_summary(tmp_path, step=3, history=history, state={}, next={"lr": 0.1}, eval={})
    with pytest.raises(SummaryError, match="next must hold the lr"):
        kit.write_summary(tmp_path, step=2, history=history, state={}, next={}, eval={})


# -- the minimal loop of docs/kit.md ----------------------------------------------------------------

MINIMAL = REPO / "examples" / "minimal_loop.py"


def test_docs_kit_page_shows_the_minimal_loop_word_for_word_and_it_is_under_60_lines():
    page = (REPO / "docs" / "kit.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", page, flags=re.DOTALL)
    assert MINIMAL.read_text() in blocks
    assert len(MINIMAL.read_text().splitlines()) < 60


def test_the_minimal_loop_passes_the_verifier(tmp_path):
    proc = run_verify("--output", tmp_path / "v", "--train-cmd", f"python -B {MINIMAL}")
    assert proc.returncode == 0, proc.stderr
