"""A loop that resumes from its own output folder (tests/trainers/out_dir_loop.py, nanoGPT's style: a config file
and --key=value overrides, `init_from=resume` reading `out_dir/ckpt.pt`) verified as it is: with `--resume-from-run`
each resume runs in its own copy of the interrupted run's folder, the correct loop passes and its nanoGPT-like
variant (no generator state in ckpt.pt) is caught as rng-torch; without it, a resume pointed at the interrupted
run's folder writes into it, and the verification stops (exit 2) naming the file that changed. The same check for
a protocol trainer: tests/e2e/test_verify_e2e.py (a file) and tests/verify/run/test_accept.py (a directory)."""

import shlex
import sys

from resumeproof.common.fingerprint import sha256_file
from tests.helpers import TRAINERS, verification

# No xdist_group: each test runs one verification of its own (one per case), and the two workers share them out.

LOOP = shlex.join([sys.executable, "-B", str(TRAINERS / "out_dir_loop.py"), str(TRAINERS / "out_dir_loop_config.py")])
TRAIN = f"{LOOP} --out_dir={{run}} --max_iters={{steps}}"
RESUME = f"{TRAIN} --init_from=resume"
SMALL = ("--observe", "--steps", "6", "--interrupt-at", "3", "--jobs", "2")


def from_run(tmp_path_factory, name: str, *flags: str):
    extra = " ".join(flags)
    commands = ("--train-cmd", f"{TRAIN} {extra}", "--resume-cmd", f"{RESUME} {extra}", "--checkpoint", "{run}/ckpt.pt")
    return verification(tmp_path_factory, name, *SMALL, "--resume-from-run", *commands)


def test_a_loop_resuming_from_its_output_folder_passes_each_resume_in_a_copy_of_its_own(tmp_path_factory):
    proc, doc, out = from_run(tmp_path_factory, "exact")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert doc["negative_divergence_detected"] and doc["determinism"]["deterministic"] is True
    source = out / "interrupted" / "ckpt.pt"
    for name in ("resumed", "resumed-no-rng"):
        started = doc["trajectories"][name]["started_from"]
        assert started == {
            "checkpoint": str(out / name / "ckpt.pt"),
            "copy_of": str(source.parent),
            "sha256": started["sha256"],
        }
        assert f"--out_dir={out / name}" in doc["trajectories"][name]["argv"]
        assert sha256_file(out / name / "ckpt.pt") != started["sha256"]  # the resume rewrote its copy ...
    assert sha256_file(source) == started["sha256"]  # ... never the interrupted run's
    assert not list(out.glob(".*.copy-*"))  # each copy renamed into place, no temporary left


def test_the_loop_that_keeps_no_generator_state_is_caught_as_rng_torch_at_its_restore(tmp_path_factory):
    proc, doc, _ = from_run(tmp_path_factory, "reseeded", "--keep_rng=False")
    assert proc.returncode == 1, proc.stderr[-3000:]
    restore = next(c for c in doc["checks"] if c["kind"] == "restore")
    assert not restore["passed"] and restore["diagnosis"]["lost"] == "rng-torch"
    assert doc["comparison"]["full_resume"]["verdict"] == "divergent"


def test_a_resume_that_writes_into_the_interrupted_runs_folder_stops_the_verification_naming_the_file(
    tmp_path_factory,
):
    """The tempting form without --resume-from-run: the checkpoint is the interrupted run's folder, and each resume
    runs in it (its own {run} holds only its log), saving ckpt.pt there."""
    resume = f"{LOOP} --out_dir={{checkpoint}} --max_iters={{steps}} --init_from=resume --log_file={{run}}/log.txt"
    commands = ("--train-cmd", TRAIN, "--resume-cmd", resume, "--checkpoint", "{run}")
    proc, doc, out = verification(tmp_path_factory, "writes-input", *SMALL, *commands)
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert doc["error"] == f"{out / 'interrupted' / 'ckpt.pt'}: changed while it was being resumed from"
    assert f"could not complete: {doc['error']}" in proc.stderr
    assert doc["checks"] == [] and "check" not in doc["trajectories"]["interrupted"]  # not of the rewritten file
