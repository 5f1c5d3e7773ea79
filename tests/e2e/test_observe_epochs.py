"""`verify --observe` on an epoch-based script in timm's style (tests/trainers/timm_style.py), run as it is: told its
length in epochs (`--epochs`, `{epochs}`), its checkpoints named by the 0-based epoch (`{epoch}`), interrupted where
it saved (`--interrupt-at checkpoints`), N and the updates per epoch read off the continuous run. A correct resume
passes; a lost generator and a lost schedule are each named, through other ways of choosing k (the epochs' ends,
a given k); a script that saves every M updates is interrupted where it saved; a k inside an epoch is answered in
epochs; a combination that cannot work is refused in one line."""

import shlex
import sys

import pytest

from tests.helpers import EXAMPLES, TRAINERS, run_verify, verification

pytestmark = pytest.mark.xdist_group("observe-epochs")  # the 3-epoch verification once; the scheduler bug reuses it

SCRIPT = f"{shlex.quote(sys.executable)} -B {shlex.quote(str(TRAINERS / 'timm_style.py'))}"
TRAIN = f"{SCRIPT} --epochs {{epochs}} --output {{run}}"
TIMM = "{run}/checkpoint-{epoch}.pth.tar"  # 12 images in batches of 4: 3 updates per epoch


def by_epoch(tmp_path_factory, name: str, epochs: int, interrupt_at: str, bug: str = ""):
    train = TRAIN + (f" --bug {bug}" if bug else "")
    args = ["--observe", "--epochs", str(epochs), "--interrupt-at", interrupt_at, "--jobs", "2", "--checkpoint", TIMM]
    return verification(
        tmp_path_factory, name, *args, "--train-cmd", train, "--resume-cmd", train + " --resume {checkpoint}"
    )


def restores(doc: dict) -> list[dict]:
    return [c for c in doc["checks"] if c["kind"] == "restore"]


@pytest.fixture(scope="module")
def three_epochs(tmp_path_factory):
    return by_epoch(tmp_path_factory, "timm", 3, "checkpoints")


def test_a_timm_style_script_resumes_exactly_from_every_epoch_checkpoint_it_wrote(three_epochs):
    proc, doc, _ = three_epochs
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert doc["steps"] == 9 and sorted(doc["interrupt_at"]) == [3, 6]  # checkpoint-2 ends the run: nothing after it
    assert [c["passed"] for c in restores(doc)] == [True, True]
    assert doc["negative_divergence_detected"] and doc["determinism"]["deterministic"] is True
    paths = [doc["trajectories"][name]["check"]["path"] for name in ("interrupted", "interrupted-6")]
    assert [p.rsplit("/", 1)[1] for p in paths] == ["checkpoint-0.pth.tar", "checkpoint-1.pth.tar"]


def test_a_timm_style_resume_without_the_generator_is_caught_at_the_epochs_end_with_it_named(tmp_path_factory):
    """timm's own resume: no generator in the checkpoint, so the resumed epoch's shuffle and dropout draw from a
    freshly seeded one. `--interrupt-at epochs` under an `{epoch}` pattern tries the epochs' ends only."""
    proc, doc, _ = by_epoch(tmp_path_factory, "timm-rng", 2, "epochs", bug="rng")
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert doc["interrupt_at"] == [3]
    (restore,) = restores(doc)
    assert not restore["passed"] and restore["diagnosis"]["lost"] == "rng-torch"


def test_a_timm_style_resume_that_builds_its_schedule_again_is_caught_with_the_scheduler_named(
    tmp_path_factory, three_epochs
):
    """The bug is in its resume alone: the correct script's continuous and interrupted runs are reused, although
    they were planned from another --interrupt-at (checkpoints)."""
    train = TRAIN
    args = ("--observe", "--epochs", "3", "--interrupt-at", "3", "--jobs", "2", "--checkpoint", TIMM)
    resume = ("--resume-cmd", f"{train} --bug scheduler --resume {{checkpoint}}", "--reuse-runs", str(three_epochs[2]))
    proc, doc, _ = verification(tmp_path_factory, "timm-schedule", *args, "--train-cmd", train, *resume)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert doc["trajectories"]["interrupted"]["reused_from"] == str(three_epochs[2])
    (restore,) = restores(doc)
    assert restore["diagnosis"]["lost"] == "scheduler"
    assert doc["comparison"]["resumes"]["resumed"]["verdict"] == "divergent"  # an epoch behind from epoch 2 on


def test_checkpoints_under_a_step_pattern_are_the_saves_of_a_script_that_saves_every_m_updates(tmp_path_factory):
    """The other layout: nanoGPT-style `ckpt_{iter}.pt` every `--save-every 3` updates, its length in updates, and
    nanoGPT's own resume (no generator in the checkpoint): interrupted where it saved, and the generator named."""
    script = f"{shlex.quote(sys.executable)} -B {shlex.quote(str(EXAMPLES / 'unmodified' / 'nanogpt_style.py'))}"
    train = f"{script} --max-iters {{steps}} --out-dir {{run}} --save-every 3 --no-rng-in-checkpoint"
    args = ("--observe", "--steps", "6", "--interrupt-at", "checkpoints", "--jobs", "2", "--train-cmd", train)
    resume = ("--resume-cmd", train + " --resume {checkpoint}", "--checkpoint", "{run}/ckpt_{step}.pt")
    proc, doc, _ = verification(tmp_path_factory, "nanogpt-saves", *args, *resume)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert doc["interrupt_at"] == [3]  # ckpt_3.pt; ckpt_6.pt ends the run
    (restore,) = restores(doc)
    assert not restore["passed"] and restore["diagnosis"]["lost"] == "rng-torch"


def test_a_k_inside_an_epoch_is_answered_in_epochs_once_the_continuous_run_shows_their_length(tmp_path_factory):
    proc, doc, _ = by_epoch(tmp_path_factory, "timm-inside", 2, "4")
    assert proc.returncode == 2, proc.stderr[-3000:]
    said = "--interrupt-at 4: {epoch} in --checkpoint names a checkpoint only where an epoch ends, and the epochs here"
    assert doc["error"].startswith(said) and doc["error"].endswith("3 updates long: k among 3 (epoch 0)")
    assert "interrupted" not in doc["trajectories"]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--interrupt-at", "checkpoints", "--checkpoint", "{run}/last.pth.tar"), "checkpoints needs {step} or"),
        (("--steps", "9", "--checkpoint", TIMM), "--steps does not apply with --epochs"),
    ],
)
def test_a_combination_that_cannot_work_is_refused_in_one_line_before_anything_runs(tmp_path, args, says):
    resume = ("--resume-cmd", TRAIN + " --resume {checkpoint}")
    out = tmp_path / "v"
    proc = run_verify("--output", str(out), "--observe", "--epochs", "2", "--train-cmd", TRAIN, *resume, *args)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("Error: ")]  # under click's usage lines
    assert proc.returncode == 2 and len(errors) == 1 and says in errors[0], proc.stderr
    assert "Traceback" not in proc.stderr and not out.exists()
