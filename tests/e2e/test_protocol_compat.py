"""The project's contract stays compatible with the founding one: its text, and a trainer written to it.

Revisions 1.1, 1.2 and 1.3 (docs/protocol.md) may add, never take away: every line of the founding text
(resume-protocol/1, revision 1.0) is still there, in order, and a trainer that knows nothing but
revision 1.0 is verified as before. Extensions it lacks fail only the options that need them,
with exit 2 and the trainer's own words, never a pass.
"""

import hashlib
import json

import pytest

from resumeproof.common import protocol
from tests.helpers import REPO, TRAINERS, read_verification, run_verify

PROTOCOL = REPO / "docs" / "protocol.md"
FOUNDING = REPO / "tests" / "data" / "protocol-1.0.md"  # the founding text, kept verbatim
# sha256 of the team's ../shared/PROTOCOL.md, which CI does not check out: the kept copy must stay it.
FOUNDING_SHA256 = "2e864404538afb08b6e41b5a17e38651e271071570074d6a7064818c071bca5d"
TRAINER = f"python -B {TRAINERS / 'founding_contract.py'}"


def test_the_kept_founding_text_is_the_teams_word_for_word():
    assert hashlib.sha256(FOUNDING.read_bytes()).hexdigest() == FOUNDING_SHA256


def test_every_line_of_the_founding_text_is_still_in_the_contract_in_order():
    ours = iter(PROTOCOL.read_text().splitlines())
    for line in FOUNDING.read_text().splitlines()[1:]:  # the title carries the revision
        assert any(mine == line for mine in ours), f"missing or moved: {line!r}"


def test_the_contract_names_its_revision_and_keeps_the_summary_protocol_string():
    text = PROTOCOL.read_text()
    assert text.startswith(f"# resume-protocol/1: the trajectory contract (revision {protocol.REVISION})")
    assert '`"resume-protocol/1"`' in text


@pytest.mark.parametrize(
    "args",
    [
        (),
        ("--interrupt-at", "all", "--steps", "6"),
        ("--interrupt-at", "epochs", "--steps", "6"),
        ("--segments", "3,3,4"),
    ],
    ids=["default", "all-points", "epochs", "chain"],
)
def test_a_founding_contract_trainer_passes(tmp_path, args):
    proc = run_verify("--output", tmp_path / "v", "--train-cmd", TRAINER, *args)
    assert proc.returncode == 0, proc.stderr
    assert read_verification(tmp_path / "v" / "verification.json")["all_checks_passed"]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--faults", "model"), "ignored explicit argument 'model'"),
        (("--check-cadence",), "unrecognized arguments: --checkpoint-every 1"),
    ],
    ids=["faults", "cadence"],
)
def test_an_extension_it_lacks_fails_that_option_with_its_own_words(tmp_path, args, said):
    proc = run_verify("--output", tmp_path / "v", "--train-cmd", TRAINER, "--steps", "4", "--interrupt-at", "2", *args)
    assert proc.returncode == 2, proc.stderr
    assert said in json.loads((tmp_path / "v" / "verification.json").read_text())["error"]
