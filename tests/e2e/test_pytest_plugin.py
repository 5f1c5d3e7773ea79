"""The pytest plugin: a user's test proves a resume exact, fails with an actionable message, runs under xdist."""

import os
import subprocess
import sys
import textwrap

from resumeproof.verify.run.launch import SUBMITIT_CLUSTER_ENV
from tests.helpers import REPO, TRAINERS

PROJECT = REPO / "examples" / "user_project"


def pytest_in(directory, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-B", "-m", "pytest", "-q", *args], cwd=directory, capture_output=True, text=True, timeout=600
    )


def test_the_example_user_project_passes_its_own_resume_tests_under_xdist_with_two_workers():
    proc = pytest_in(PROJECT, "-n", "2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 passed" in proc.stdout


def test_a_faulty_trainer_fails_the_users_test_with_the_diagnosis_in_the_message(tmp_path):
    faulty = f"{sys.executable} -B {TRAINERS / 'forgets_optimizer.py'}"
    (tmp_path / "test_faulty.py").write_text(
        textwrap.dedent(f"""
            def test_resume(resume_verification):
                result = resume_verification({faulty!r}, steps=4, interrupt_at=2)
                assert result, result.explanation
        """)
    )
    proc = pytest_in(tmp_path, "-p", "no:cacheprovider")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    out = proc.stdout
    said = "resumed (from step 2) differs from continuous from update 4 (history[3].loss); lost optimizer"
    assert f"resumeproof FAILED: {said}" in out and f"failed: {said}: first mismatch history[3].loss" in out
    assert "diagnosis resumed: lost optimizer at update 3 (the first resumed one)" in out
    assert "verification.json" in out


def test_an_unmodified_script_is_verified_from_a_users_test_with_observe_and_its_bug_named(tmp_path):
    """nanoGPT's own resume reseeds the generator (examples/unmodified/nanogpt_style.py --no-rng-in-checkpoint):
    caught at its first resumed update by the restore check, from a user's test through the fixture."""
    script = REPO / "examples" / "unmodified" / "nanogpt_style.py"
    train = f"{sys.executable} -B {script} --max-iters {{steps}} --out-dir {{run}} --no-rng-in-checkpoint"
    (tmp_path / "test_unmodified.py").write_text(
        textwrap.dedent(f"""
            def test_resume(resume_verification):
                result = resume_verification(
                    {train!r}, observe=True, resume_cmd={train + " --resume {checkpoint}"!r},
                    checkpoint="{{run}}/ckpt_{{step}}.pt", steps=6, interrupt_at=3,
                )
                (restore,) = [c for c in result.document["checks"] if c["kind"] == "restore"]
                assert not restore["passed"] and restore["first_mismatch"] == "generators"
                assert (restore["diagnosis"]["lost"], restore["diagnosis"]["step"]) == ("rng-torch", 4)
                assert result, result.explanation
        """)
    )
    proc = pytest_in(tmp_path, "-p", "no:cacheprovider")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "1 failed" in proc.stdout and "assert Outcome(exit_code=1" in proc.stdout  # the last assert, not before
    assert "diagnosis resumed: lost rng-torch at update 4 (the first resumed one)" in proc.stdout


FOREIGN_SESSION = """
import sys, pytest
code = pytest.main(["-q", "-p", "no:cacheprovider", sys.argv[1]])
loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("torch", "rich", "click", "numpy"))
print("LOADED", loaded)
print("PLUGIN", "resumeproof.pytest_plugin" in sys.modules)
sys.exit(code)
"""


def test_a_session_that_does_not_use_it_pays_nothing_for_it(tmp_path):
    (tmp_path / "test_other.py").write_text("def test_arithmetic():\n    assert 1 + 1 == 2\n")
    proc = subprocess.run(
        [sys.executable, "-B", "-c", FOREIGN_SESSION, str(tmp_path / "test_other.py")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "PLUGIN True" in proc.stdout  # registered through the entry point, no conftest
    assert "LOADED []" in proc.stdout  # and it brought in neither torch nor the verifier's libraries


def test_a_users_test_verifies_through_a_launcher_and_reads_where_each_trajectory_ran(tmp_path):
    """The fixture's options are the command's: `launcher="slurm"` sends every trajectory to submitit (its local
    executor here, RESUMEPROOF_SUBMITIT_CLUSTER=local), and the typed result says where each one ran."""
    trainer = f"{sys.executable} -B {REPO / 'train.py'}"
    (tmp_path / "test_cluster.py").write_text(
        textwrap.dedent(f"""
            def test_resume(resume_verification):
                result = resume_verification({trainer!r}, steps=4, interrupt_at=2, faults="model", launcher="slurm")
                assert result, result.explanation
                ran = {{name: t.ran_on for name, t in result.verification.trajectories.items()}}
                assert ran and all(p.launcher.startswith("slurm") and p.attempts == 1 for p in ran.values()), ran
                print("JOBS", len({{p.job_id for p in ran.values()}}))
        """)
    )
    env = {**os.environ, SUBMITIT_CLUSTER_ENV: "local"}
    proc = subprocess.run(
        [sys.executable, "-B", "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "JOBS 5" in proc.stdout  # one job per trajectory: continuous, interrupted, resumed, no-RNG, the fault
