"""A short chaos run: signals at seeded random instants, inside training and inside writes; nothing lost."""

import json

from tests.helpers import REPO, run_script


def test_a_short_chaos_run_loses_nothing(tmp_path):
    out = tmp_path / "chaos"
    proc = run_script(
        REPO / "verify_resume.py", "chaos", "--output", out, "--kills", "6", "--steps", "14", "--seed", "3"
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((out / "verification.json").read_text())
    assert doc["all_checks_passed"] is True
    assert all(doc["checks"].values())
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
