"""`--faults all` under `verify --observe` blocks every restore the observer can block; a script that never calls one
(no scheduler object, no GradScaler on the CPU) resumes exactly all the same. Such a fault is not applicable: the
verification passes and every report lists it with the call the script never made (verify/judge/records/applies.py). The
same for the negative control of a script that restores no generator through a setter (it seeds again, as nanoGPT
does): not applicable, never "divergent". Two styles: a transformers `Trainer` script through HfArgumentParser
(examples/unmodified/hf_trainer.py on the CPU: no GradScaler) and a plain loop in nanoGPT's shape
(tests/trainers/inclusive_loop.py: no scheduler, no GradScaler, max_iters + 1 updates). The Trainer script resumed
with `ignore_data_skip=True`, a bug in its resume alone, reuses the exact script's runs."""

import shlex
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest

from tests.helpers import EXAMPLES, TRAINERS, verification

PY = shlex.quote(sys.executable)
HF = f"{PY} -B {shlex.quote(str(EXAMPLES / 'unmodified' / 'hf_trainer.py'))} --per_device_train_batch_size 4 --use_cpu"
LOOP = f"{PY} -B {shlex.quote(str(TRAINERS / 'inclusive_loop.py'))} --max_iters={{steps}} --out_dir={{run}}"
SMALL = ("--observe", "--jobs", "2", "--steps", "4", "--interrupt-at", "2")
# Each fixture's tests on one worker (its verification made once), the two fixtures' on either.
ON_HF, ON_LOOP = pytest.mark.xdist_group("faults-hf"), pytest.mark.xdist_group("faults-loop")


class Reported(NamedTuple):
    """A verification with its CI reports, and its output folder (whose runs a bug in the resume alone reuses)."""

    proc: subprocess.CompletedProcess
    doc: dict
    xml: str
    md: str
    out: Path


@pytest.fixture(scope="module")
def hf(tmp_path_factory) -> Reported:
    """The Trainer script, exact, --faults all, with the CI reports."""
    out = tmp_path_factory.mktemp("ci")
    reports = ("--junit-xml", str(out / "junit.xml"), "--summary-md", str(out / "summary.md"))
    args = ("--preset", "transformers", "--faults", "all", "--train-cmd", f"{HF} --report_to none", *reports)
    proc, doc, runs = verification(tmp_path_factory, "hf-all", *SMALL, *args)
    return Reported(proc, doc, (out / "junit.xml").read_text(), (out / "summary.md").read_text(), runs)


@pytest.fixture(scope="module")
def loop(tmp_path_factory):
    """The nanoGPT-shaped loop that saves and restores its generator: exact, --faults all."""
    train = f"{LOOP} --save_rng=True"
    resume = ("--resume-cmd", f"{train} --resume_from={{checkpoint}}", "--checkpoint", "{run}/ckpt_{step}.pt")
    return verification(tmp_path_factory, "loop-all", *SMALL, "--faults", "all", "--train-cmd", train, *resume)[:2]


@ON_HF
def test_an_exact_trainer_script_under_faults_all_passes_with_the_scaler_it_never_loads_not_applicable(hf):
    proc, doc = hf.proc, hf.doc
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert {part: f["status"] for part, f in doc["faults"].items()} == {
        "model": "caught",
        "optimizer": "caught",
        "scheduler": "caught",
        "scaler": "not-applicable",
    }
    assert doc["faults"]["scheduler"]["diagnosis"]["lost"] == "scheduler" and doc["negative_divergence_detected"]
    assert doc["blind_to"] == [] and doc["not_applicable"] == {
        "scaler": "the script never called torch.amp.GradScaler.load_state_dict"
    }
    line = proc.stderr.strip().splitlines()[-1]
    assert line == doc["verdict"]["line"] and line.startswith("PASSED: every resume concordant")
    assert line.endswith("not applicable: scaler (the script never called torch.amp.GradScaler.load_state_dict)")
    assert "not applicable: resume without scaler: the script never called" in proc.stderr


@ON_HF
def test_the_ci_reports_skip_the_fault_that_did_not_apply_and_say_why(hf):
    xml, md = hf.xml, hf.md
    assert 'failures="0"' in xml and 'skipped="1"' in xml
    assert '<skipped message="not applicable: the script never called torch.amp.GradScaler.load_state_dict"' in xml
    assert md.startswith("## resumeproof: PASSED (exit 0)") and "| scaler | not applicable |" in md


@ON_HF
def test_the_trainers_own_checkpoint_is_reported_without_advising_an_option_observe_refuses(hf):
    """The Trainer's checkpoint holds pickles it loads itself: resumed from all the same, and `check` says so; it
    advises no --allow-unsafe-pickle, which verify --observe does not take."""
    proc, doc, md = hf.proc, hf.doc, hf.md
    checked = doc["trajectories"]["interrupted"]["check"]
    assert checked["verdict"] == "refused" and checked["path"].endswith("checkpoint-2")
    assert "rng_state.pth: a pickle" in checked["line"] and "the script loads it itself" in checked["line"]
    assert "--allow-unsafe-pickle" not in proc.stderr and "--allow-unsafe-pickle" not in md
    assert "by resumeproof check (not part of the verdict)" in proc.stderr and checked["line"] in proc.stderr
    assert "(not part of the verdict): " + checked["line"].split(":")[0] in md


@ON_LOOP
def test_a_plain_loop_without_scheduler_or_scaler_passes_faults_all_with_both_not_applicable(loop):
    proc, doc = loop
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert [p for p, f in doc["faults"].items() if f["status"] == "caught"] == ["model", "optimizer"]
    assert list(doc["not_applicable"]) == ["scheduler", "scaler"] and doc["blind_to"] == []
    assert "scheduler (the script never called an LR scheduler's load_state_dict)" in doc["verdict"]["line"]
    skipped = [c for c in doc["checks"] if c["not_applicable"]]
    assert [(c["kind"], c["passed"], c["diagnosis"]) for c in skipped] == [("fault", True, None)] * 2


@ON_LOOP
def test_a_loop_that_runs_max_iters_plus_one_updates_is_said_once_to_be_compared_on_the_first(loop):
    proc, doc = loop
    said = "the continuous run made 5 updates; the first 4 are compared"
    assert doc["continuous_made"] == 5 and doc["notes"] == [said]
    assert proc.stderr.count(said) == 1


def test_a_loop_that_seeds_its_generator_again_fails_on_its_resume_and_its_control_is_not_applicable(
    tmp_path_factory,
):
    """nanoGPT's resume: it calls no generator setter, so the negative control blocks nothing; its run diverges with
    the resume's own fault, which it must not claim as the control's divergence."""
    resume = ("--resume-cmd", f"{LOOP} --resume_from={{checkpoint}}", "--checkpoint", "{run}/ckpt_{step}.pt")
    proc, doc, _ = verification(tmp_path_factory, "loop-reseeded", *SMALL, "--train-cmd", LOOP, *resume)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert doc["comparison"]["no_rng_resume"]["verdict"] == "not-applicable"
    assert not doc["negative_divergence_detected"]
    [control] = [c for c in doc["checks"] if c["kind"] == "negative-control"]
    assert control["passed"] and control["diagnosis"] is None and "torch.set_rng_state" in control["not_applicable"]
    assert doc["verdict"]["line"].startswith("FAILED: resumed's first update does not start from what")
    assert doc["verdict"]["line"].endswith("lost rng-torch") and "negative control" not in doc["verdict"]["line"]


@ON_HF
def test_a_trainer_resumed_with_ignore_data_skip_is_caught_with_the_data_position_named(tmp_path_factory, hf):
    """`ignore_data_skip=True` starts the resumed epoch from its beginning: the new iterator draws from the restored
    generator, and the first resumed batch is the continuous run's first. Its bug is in its resume alone: the exact
    script's runs are reused."""
    train, resume = f"{HF} --report_to none", f"{HF} --report_to none --ignore_data_skip true"
    args = ("--preset", "transformers", "--train-cmd", train, "--resume-cmd", resume, "--reuse-runs", str(hf.out))
    proc, doc, _ = verification(tmp_path_factory, "hf-bug", *SMALL, *args)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert doc["trajectories"]["interrupted"]["reused_from"] == str(hf.out)
    (restore,) = [c for c in doc["checks"] if c["kind"] == "restore"]  # the epoch's first batch again
    assert (
        restore["diagnosis"]["lost"] == "data"
        and "the continuous run's of update 1" in restore["diagnosis"]["explanation"]
    )
