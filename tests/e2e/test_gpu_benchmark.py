"""benchmarks/gpu.py without a GPU: the matrix it builds, how it reads verification.json, where it writes its tables.

The GPU run itself (`python -B -m benchmarks.gpu` on a CUDA machine) is the benchmark; here its logic runs on the
CPU: one real verification read through the same code, made-up documents for the verdicts a CPU cannot produce.
The matrix is benchmarks/gpu_matrix.py, the runs and their outcomes benchmarks/gpu_outcomes.py, the tables
benchmarks/gpu_tables.py.
"""

import dataclasses
import os
import shlex
import subprocess
import sys

import pytest
import torch

from benchmarks import gpu_matrix, gpu_outcomes, gpu_tables
from tests.helpers import REPO


def test_the_matrix_verifies_every_precision_at_both_tolerances_then_the_faults_and_a_nondeterministic_variant():
    cases = gpu_matrix.matrix("cuda", python="python")
    assert len({case.key for case in cases}) == len(cases)
    grid = {(c.precision, c.atol) for c in cases if c.table == "precisions"}
    assert grid == {(p, atol) for p in ("float64", "float32", "bf16", "fp16") for atol in (None, 0.0)}
    assert [c.table for c in cases[:3]] == ["faults", "nondeterministic", "nondeterministic"]  # the longest first
    faults, variant, tiers = cases[0], cases[1], cases[2]
    assert variant.extra == ("--require-deterministic",) and tiers.extra == ("--faults", "all")
    assert tiers.expect == gpu_matrix.PASSED and tiers.train_cmd == variant.train_cmd
    assert faults.extra == ("--faults", "all") and "--device cuda --precision fp16" in faults.train_cmd
    assert (
        variant.expect == gpu_matrix.NOT_DETERMINISTIC
        and f"-m benchmarks.gpu {gpu_matrix.VARIANT}" in variant.train_cmd
    )
    assert gpu_matrix.matrix("cpu")[1].expect == gpu_matrix.PASSED  # one CPU thread adds in one order
    for case in cases:
        argv = case.argv(REPO / "runs" / "x", jobs=4)
        assert argv[2] == "verify_resume.py" and argv[argv.index("--jobs") + 1] == "4"
        assert ("--atol" in argv) is (case.atol is not None)
        assert argv[argv.index("--train-cmd") + 1] == case.train_cmd
        trainer = (
            "-m benchmarks.gpu nondeterministic-trainer"
            if case.table == "nondeterministic"
            else "-m resumeproof.reference"
        )
        assert shlex.split(case.train_cmd)[:2] == ["python", "-B"]
        assert case.train_cmd.endswith(f"{trainer} --device cuda --precision {case.precision}"), case.train_cmd


def test_the_dry_run_prints_every_verification_and_runs_nothing(tmp_path):
    output = tmp_path / "never"
    proc = subprocess.run(
        [sys.executable, "-B", "-m", "benchmarks.gpu", "--dry-run", "--output", str(output)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len([line for line in lines if "verify_resume.py" in line]) == len(gpu_matrix.matrix("cuda"))
    assert not output.exists()


def test_the_nondeterministic_variant_runs_as_the_verifier_starts_it_from_the_repository(tmp_path):
    """The matrix's command for the variant, in the directory the verifier gives its trainers (the repository's
    root, where gpu_outcomes.run_case starts the verifier): a protocol trainer that writes its summary."""
    variant = next(case for case in gpu_matrix.matrix("cpu") if case.table == "nondeterministic")
    argv = [*shlex.split(variant.train_cmd), "--steps", "2", "--output", str(tmp_path / "run")]
    proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "run" / "summary.json").is_file() and (tmp_path / "run" / "checkpoint.pt").is_file()


@pytest.mark.skipif(torch.cuda.is_available(), reason="here CUDA is available: the benchmark would run")
def test_without_cuda_the_benchmark_refuses_in_one_line(tmp_path):
    output = tmp_path / "gpu"
    proc = subprocess.run(
        [sys.executable, "-B", "-m", "benchmarks.gpu", "--output", str(output)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "gpu.py: error: CUDA is not available here: run it on a machine with a CUDA GPU (or --device cpu, to check it)"
    ]
    assert not output.exists()


def document(**changes):
    """A verification.json as far as the benchmark reads it."""
    full = {"max_deviation": 0.0, "first_mismatch": None}
    base = {
        "error": None,
        "deterministic": True,
        "all_checks_passed": True,
        "comparison": {"full_resume": full},
        "faults": {},
        "blind_to": [],
        "determinism": {},
        "environment": {"torch": "2.11.0+cu130"},
    }
    return {**base, **changes}


@pytest.mark.parametrize(
    ("changes", "verdict", "detail"),
    [
        ({}, gpu_matrix.PASSED, ""),
        ({"all_checks_passed": False, "blind_to": ["scaler"]}, gpu_matrix.FAILED, "blind to ['scaler']"),
        (
            {
                "all_checks_passed": False,
                "deterministic": False,
                "determinism": {"first_step": 3, "first_mismatch": "history[2].loss"},
            },
            gpu_matrix.NOT_DETERMINISTIC,
            "differs from itself from update 3 (history[2].loss)",
        ),
        (
            {"all_checks_passed": False, "deterministic": False, "error": "continuous: exited with status 2"},
            gpu_matrix.INCOMPLETE,
            "continuous: exited with status 2",
        ),
    ],
    ids=["passed", "failed", "not-deterministic", "error-first"],
)
def test_a_verdict_is_read_as_the_verifier_says_it_an_error_first_then_determinism(changes, verdict, detail):
    case = next(c for c in gpu_matrix.matrix("cuda") if c.table == "precisions")
    found = gpu_outcomes.outcome(case, document(**changes), 1, 12.5)
    assert found.verdict == verdict and detail in found.detail
    row = gpu_tables.precisions_table([found]).splitlines()[2]
    assert f"**{verdict}**" in row and "12.5" in row
    assert gpu_outcomes.outcome(case, None, 2, 1.0).verdict == gpu_matrix.INCOMPLETE  # no verification.json at all


def test_a_real_verification_is_read_into_the_tables(tmp_path):
    """One fp16 verification on the CPU, with the scaler fault, through run_case as the GPU matrix runs each."""
    case = gpu_matrix.Case(
        key="fp16-small",
        table="faults",
        precision="fp16",
        atol=0.0,
        train_cmd=gpu_matrix.reference_cmd("cpu", "fp16"),
        extra=("--steps", "4", "--interrupt-at", "2", "--faults", "scaler"),
    )
    found = gpu_outcomes.run_case(case, tmp_path, jobs=2, env=None)
    assert (found.verdict, found.exit_code, found.max_deviation) == (gpu_matrix.PASSED, 0, 0.0), found.detail
    assert found.faults["scaler"].detected and found.faults["scaler"].diagnosis == "scaler"
    assert found.environment["device"] == "cpu" and found.environment["dtype"] == "float32"
    table = gpu_tables.faults_table([found])
    assert "| scaler | yes |" in table and "**passed**" in table
    assert (tmp_path / "fp16-small.log").is_file() and (tmp_path / "fp16-small" / "verification.json").is_file()


def test_the_figures_go_between_the_markers_of_docs_gpu_md_and_nowhere_else():
    text = gpu_tables.DOC.read_text()
    written = {name: f"new {name}\n" for name in gpu_tables.BLOCKS}
    once = gpu_tables.write_blocks(text, written)
    assert gpu_tables.write_blocks(once, written) == once  # written again: the same page
    for name in gpu_tables.BLOCKS:
        assert f"<!-- gpu:{name} -->\nnew {name}\n<!-- /gpu:{name} -->" in once
    outside = [part.split("<!-- /gpu:")[-1] for part in once.split("<!-- gpu:")]
    assert outside == [part.split("<!-- /gpu:")[-1] for part in text.split("<!-- gpu:")]
    with pytest.raises(ValueError, match="must appear once each"):
        gpu_tables.write_blocks(text.replace("<!-- /gpu:ratio -->", ""), written)


def test_docs_gpu_md_holds_every_block_the_benchmark_writes_and_no_unmeasured_figure():
    text = gpu_tables.DOC.read_text()
    measured = "<!-- gpu:environment -->\nNot measured yet." not in text
    empty = gpu_tables.blocks([], None, 0.0, "cuda")
    for name in gpu_tables.BLOCKS:
        assert text.count(f"<!-- gpu:{name} -->\n") == 1 and text.count(f"<!-- /gpu:{name} -->") == 1, name
        if not measured and name != "environment":
            body = text.split(f"<!-- gpu:{name} -->\n")[1].split(f"<!-- /gpu:{name} -->")[0]
            assert body == empty[name], name  # headers only: not a figure before the benchmark wrote one
    assert measured or "No figure on this page has been measured yet" in text
    assert "None" not in text.split("<!-- gpu:environment -->\n")[1].split("<!-- /gpu:environment -->")[0]


def measured(gpu: dict | None) -> list[gpu_outcomes.Outcome]:
    """One outcome whose trainer reported `gpu` as its meta.gpu."""
    case = gpu_matrix.matrix("cuda")[2]
    env = {"torch": "2.11.0", "python": "3.12.3", "platform": "Linux", "gpu": gpu}
    found = gpu_outcomes.outcome(case, document(), 0, 1.0)
    return [dataclasses.replace(found, environment=env)]


H200 = {"name": "NVIDIA H200", "capability": "9.0", "driver": "580.159.04", "cuda": "13.0", "cudnn": 91900}


def test_the_environment_line_names_the_gpu_its_driver_and_the_cuda_the_driver_supports():
    line = gpu_tables.environment_text(measured({**H200, "driver_cuda": "13.0"}), 179.0, "cuda")
    assert "with `python -B -m benchmarks.gpu` (179 s in all): NVIDIA H200 (compute capability 9.0)" in line
    assert "driver 580.159.04 (supports CUDA 13.0), CUDA 13.0, cuDNN 91900; torch 2.11.0, Python 3.12.3" in line


def test_the_environment_line_leaves_out_what_the_trainer_could_not_read():
    line = gpu_tables.environment_text(measured({**H200, "driver_cuda": None}), 179.0, "cuda")
    assert "driver 580.159.04, CUDA 13.0, cuDNN 91900;" in line and "supports" not in line and "None" not in line
    line = gpu_tables.environment_text(measured({**H200, "driver": None, "driver_cuda": None}), 1.0, "cuda")
    assert "driver release unknown, CUDA 13.0" in line and "None" not in line
    assert "device cpu, no GPU reported" in gpu_tables.environment_text(measured(None), 1.0, "cpu")


def test_the_tables_go_into_the_page_named_and_a_page_without_the_markers_is_refused_before_any_run(tmp_path):
    from benchmarks import gpu

    copy = tmp_path / "gpu.md"
    copy.write_text(gpu_tables.DOC.read_text())
    assert gpu._unwritable(copy) == "" and gpu._unwritable(gpu_tables.DOC) == ""
    assert gpu._unwritable(tmp_path / "missing.md") == "No such file or directory"
    (tmp_path / "other.md").write_text("# no markers\n")
    assert "must appear once each" in gpu._unwritable(tmp_path / "other.md")


def test_the_device_script_runs_only_the_steps_it_knows_and_writes_how_each_ended_into_its_summary(tmp_path):
    """benchmarks/device_check.sh off the GPU, with nothing installed: its header, and an unknown step named."""
    out = tmp_path / "out"
    env = {**os.environ, "INSTALL": "0", "PYTHON": sys.executable, "OUT": str(out), "BUDGET": "100"}
    proc = subprocess.run(
        ["bash", "benchmarks/device_check.sh", "no-such-step"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = (out / "summary.txt").read_text()
    assert f"torch {torch.__version__}" in summary and "nothing installed (INSTALL=0)" in summary
    assert "unknown step no-such-step (cuda-tests, observer-cost, gpu-bench, large-observe)" in summary
    assert "s of a 100 s budget; outputs in" in summary.splitlines()[-1]
