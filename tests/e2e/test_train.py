"""The reference experiment is the one the README specifies."""

import json
import os
import subprocess
import sys

import pytest

from resumeproof.common import fingerprint, protocol
from resumeproof.reference import train
from tests.helpers import REPO, run_script


def summary(run_dir):
    return json.loads((run_dir / "summary.json").read_text())


def test_data_file_regenerates_byte_for_byte(tmp_path):
    proc = run_script(REPO / "data" / "make_data.py", tmp_path / "synthetic.csv")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "synthetic.csv").read_bytes() == train.DATA_FILE.read_bytes()  # the one the package ships


def test_network_has_exactly_33_parameters():
    model = train.build(train.Experiment()).model
    assert sum(p.numel() for p in model.parameters()) == 33


def test_after_5_updates_the_cursor_is_mid_epoch(interrupted_run):
    data = summary(interrupted_run)["state"]["data"]  # the data position, named as in the checkpoint
    assert (data["epoch"], data["cursor"]) == (0, 20)


def test_10_updates_cross_into_a_new_permutation(continuous_run):
    s = summary(continuous_run)
    assert (s["state"]["data"]["epoch"], s["state"]["data"]["cursor"]) == (1, 16)
    epoch0 = [row for r in s["history"][:6] for row in r["rows"]]
    epoch1 = [row for r in s["history"][6:] for row in r["rows"]]
    assert sorted(epoch0) == list(range(24))  # epoch 0: every row once
    assert epoch1 != epoch0[:16]  # epoch 1 has its own order


def test_the_11th_update_would_use_lr_000375(continuous_run):
    s = summary(continuous_run)
    assert s["next"]["lr"] == 0.03 * 0.5**3 == 0.00375
    assert [r["lr"] for r in s["history"]] == [0.03] * 3 + [0.015] * 3 + [0.0075] * 3 + [0.00375]


def test_run_is_single_threaded_float64_cpu_whatever_the_environment(continuous_run):
    meta = summary(continuous_run)["meta"]
    assert (meta["threads"], meta["dtype"], meta["device"]) == (1, "float64", "cpu")


def test_all_three_generators_are_used(continuous_run):
    s = summary(continuous_run)
    assert set(s["next"]["rng"]) == {"python", "numpy", "torch"}


def test_existing_output_directory_is_refused_and_untouched(tmp_path):
    (tmp_path / "keep.txt").write_text("mine")
    proc = run_script(REPO / "train.py", "--steps", "1", "--output", tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().count("\n") == 0 and "already exists" in proc.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]


def test_omit_rng_restore_without_resume_is_a_usage_error(tmp_path):
    proc = run_script(REPO / "train.py", "--steps", "1", "--output", tmp_path / "x", "--omit-rng-restore")
    assert proc.returncode == 2
    assert not (tmp_path / "x").exists()


def test_one_thread_is_forced_even_when_the_environment_asks_for_more(tmp_path):
    env = {**os.environ, "OMP_NUM_THREADS": "8", "MKL_NUM_THREADS": "8"}
    proc = subprocess.run(
        [sys.executable, "-B", "train.py", "--steps", "1", "--output", str(tmp_path / "r")],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert summary(tmp_path / "r")["meta"]["threads"] == 1


def test_unknown_omit_part_is_refused_with_the_valid_ones(tmp_path, interrupted_run):
    resume = interrupted_run / "checkpoint.pt"
    args = ("--steps", "1", "--output", tmp_path / "x", "--resume", resume, "--omit", "weights")
    proc = run_script(REPO / "train.py", *args)
    assert proc.returncode == 2
    assert "unknown part weights; valid parts: model, optimizer, scheduler, rng-python" in proc.stderr
    assert not (tmp_path / "x").exists()


def test_omit_without_resume_is_a_usage_error(tmp_path):
    proc = run_script(REPO / "train.py", "--steps", "1", "--output", tmp_path / "x", "--omit", "model")
    assert proc.returncode == 2 and "need --resume" in proc.stderr
    assert not (tmp_path / "x").exists()


def test_writing_generations_every_3_steps_changes_nothing(tmp_path, continuous_run):
    args = ("--steps", "10", "--output", tmp_path / "r", "--checkpoint-every", "3", "--keep", "5")
    proc = run_script(REPO / "train.py", *args)
    assert proc.returncode == 0, proc.stderr
    generations = sorted(p.name for p in (tmp_path / "r").glob("step_*.pt"))
    assert generations == ["step_000003.pt", "step_000006.pt", "step_000009.pt"]
    for name in generations:
        fingerprint.verify(tmp_path / "r" / name)
    with_generations, without = summary(tmp_path / "r"), summary(continuous_run)
    for key in ("step", "history", "state", "next", "eval"):
        assert with_generations[key] == without[key], key


def test_a_cpu_run_declares_exactly_the_parts_its_omit_accepts(continuous_run):
    """meta.parts, which --faults all reads: the CPU's generators, no scaler, no other ranks in one process."""
    meta = summary(continuous_run)["meta"]
    assert meta["parts"] == list(protocol.STANDARD_PARTS)  # model ... rng-torch, data, progress
    assert (meta["precision"], meta["gpu"]) == ("float64", None)


# -- --precision on the CPU: float32, and autocast over float32 weights (bf16; fp16 with a GradScaler) ----------


def verify_precision(tmp_path, precision, *extra):
    out = tmp_path / precision
    train_cmd = f"{sys.executable} -B train.py --precision {precision}"
    args = ("--output", out, "--atol", "0", "--jobs", "2", "--steps", "6", "--interrupt-at", "3", *extra)
    proc = run_script(REPO / "verify_resume.py", *args, "--train-cmd", train_cmd, timeout=240)
    return proc, json.loads((out / "verification.json").read_text()), summary(out / "continuous")


@pytest.mark.parametrize("precision", ["float32", "bf16"])
def test_a_float32_or_bf16_autocast_run_resumes_bit_identically(tmp_path, precision):
    proc, doc, continuous = verify_precision(tmp_path, precision)
    assert proc.returncode == 0, proc.stderr
    assert doc["comparison"]["full_resume"]["max_deviation"] == 0.0
    meta = continuous["meta"]
    assert (meta["dtype"], meta["precision"], meta["device"]) == ("float32", precision, "cpu")
    assert "scaler" not in meta["parts"] and "scaler" not in continuous["state"]
    assert all("scale" not in record for record in continuous["history"])


def test_an_fp16_run_scales_its_loss_resumes_bit_identically_and_a_lost_scaler_is_caught(tmp_path):
    proc, doc, continuous = verify_precision(tmp_path, "fp16", "--faults", "scaler,rng-torch")
    assert proc.returncode == 0, proc.stderr
    assert continuous["meta"]["parts"][-1] == "scaler"
    assert [record["scale"] for record in continuous["history"]] == [256.0] * 4 + [512.0] * 2  # x2 after 4 updates
    assert continuous["state"]["scaler"] == {
        "scale": 512.0,
        "growth_factor": 2.0,
        "backoff_factor": 0.5,
        "growth_interval": 4,
        "_growth_tracker": 2,
    }
    lost = doc["faults"]["scaler"]
    assert lost["detected"] and lost["diagnosis"]["lost"] == "scaler"
    assert {"state", "history.scale"} <= set(lost["caught_by"]), lost["caught_by"]
    assert doc["faults"]["rng-torch"]["detected"]
