"""A short chaos run: signals at seeded random instants, inside training and inside writes; nothing lost
(verify/chaos/run.py, and the verification.json of verify/chaos/result.py; its settings:
tests/verify/test_settings.py)."""

import json

import jsonschema

from tests.helpers import REPO, run_script

SCHEMA = json.loads((REPO / "docs" / "verification.schema.json").read_text())


def test_a_short_chaos_run_loses_nothing(tmp_path):
    out = tmp_path / "chaos"
    proc = run_script(
        REPO / "verify_resume.py", "chaos", "--output", out, "--kills", "6", "--steps", "14", "--seed", "3"
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((out / "verification.json").read_text())
    assert doc["all_checks_passed"] is True
    assert len(doc["checks"]) == 4 and all(c["passed"] and c["kind"] == "chaos" for c in doc["checks"])
    check = {"$defs": SCHEMA["$defs"], "$ref": "#/$defs/check"}  # the same shape as a verification's checks
    for entry in doc["checks"]:
        jsonschema.validate(entry, check)
    assert len(doc["kills"]) == 6
    assert all(
        k["signal"] in ("SIGKILL", "SIGTERM", "SIGUSR1") and k["phase"] in ("training", "writing") for k in doc["kills"]
    )
    assert sum(doc["kills_by_phase"].values()) == 6
    stops = sum(n for s, n in doc["kills_by_signal"].items() if s != "SIGUSR1")
    assert stops <= doc["trainer_starts"] <= stops + 1  # one start, and one more after each kill or stop
    assert doc["kills_without_valid_generation"] == []
    assert "PASSED: nothing lost" in proc.stderr


def test_chaos_refuses_an_existing_output(tmp_path):
    proc = run_script(REPO / "verify_resume.py", "chaos", "--output", tmp_path)
    assert proc.returncode == 2 and "already exists" in proc.stderr
