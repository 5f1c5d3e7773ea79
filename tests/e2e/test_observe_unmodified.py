"""`verify --observe` on scripts written with no thought of resumeproof (examples/unmodified/), run exactly as they
are: a correct resume passes and each bug fails with the part it lost named, scripts that break the rules
differently (nanoGPT-style: a checkpoint per step, the global generator, `--stop exit`; a large bf16 one at a CPU
size: one checkpoint overwritten after every update, batches from the device's generator; a preemptible one: a
directory per step, a LambdaLR, its own numpy Generator, a SIGTERM handler, `--stop sigterm`; a `LightningCLI`
script through its preset (a transformers `Trainer` script's bug: test_faults_not_applicable.py, beside the runs it
reuses); a DDP script under torchrun, every rank watched). A
script that differs from itself is judged by its restore and its measured spread (test_atomics_e2e.py), or with
--require-deterministic reported as such, with a verdict on its restore all the same."""

import shlex
import sys

import pytest

from tests.helpers import EXAMPLES, SMALL_SCRIPT, TORCHRUN, verification

# No xdist_group but the DDP pair's: each other test runs its own verification, and the two workers share them out.

PY = shlex.quote(sys.executable)
NANOGPT = (
    f"{PY} -B {shlex.quote(str(EXAMPLES / 'unmodified' / 'nanogpt_style.py'))} --max-iters {{steps}} --out-dir {{run}}"
)
LIGHTNING = (
    f"{PY} -B {shlex.quote(str(EXAMPLES / 'unmodified' / 'lightning_cli.py'))} fit --trainer.logger false"
    " --trainer.enable_progress_bar false --trainer.enable_model_summary false"
)
DDP = shlex.join([*TORCHRUN, "--standalone", "--nproc-per-node", "2", str(EXAMPLES / "unmodified" / "ddp_script.py")])
DDP += " --steps {steps} --dir {run}"
PREEMPTIBLE = f"{PY} -B {shlex.quote(str(EXAMPLES / 'unmodified' / 'preemptible.py'))} --total {{steps}} --dir {{run}}"
LARGE = f"{PY} -B {shlex.quote(str(EXAMPLES / 'unmodified' / 'large_bf16.py'))} --layers 2 --width 64 --device cpu"
LARGE += " --max-iters {steps} --out-dir {run}"


def observed(tmp_path_factory, name: str, train: str, resume: str, checkpoint: str, *extra: str):
    args = ["--observe", "--steps", "6", "--interrupt-at", "3", "--jobs", "2"]
    return verification(
        tmp_path_factory, name, *args, "--train-cmd", train, "--resume-cmd", resume, "--checkpoint", checkpoint, *extra
    )


def checks(doc: dict, kind: str) -> list[dict]:
    return [c for c in doc["checks"] if c["kind"] == kind]


def test_a_nanogpt_style_script_that_saves_its_generator_resumes_exactly_and_every_fault_is_named(tmp_path_factory):
    resume = NANOGPT + " --resume {checkpoint}"
    proc, doc, _ = observed(
        tmp_path_factory, "nanogpt", NANOGPT, resume, "{run}/ckpt_{step}.pt", "--faults", "optimizer,model"
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert [c["passed"] for c in checks(doc, "restore")] == [True]
    assert doc["negative_divergence_detected"] and doc["determinism"]["deterministic"] is True
    named = {part: f["diagnosis"]["lost"] for part, f in doc["faults"].items()}
    assert named == {"optimizer": "optimizer", "model": "model"}
    checked = doc["trajectories"]["interrupted"]["check"]
    assert checked["verdict"] == "accepted" and checked["path"].endswith("ckpt_3.pt")


def test_the_large_bf16_script_at_a_cpu_size_resumes_exactly_from_its_one_overwritten_checkpoint(tmp_path_factory):
    """examples/unmodified/large_bf16.py, which benchmarks/device_check.sh verifies at 1.07B parameters on a GPU, at
    two layers of 64 on the CPU: its single ckpt.pt, overwritten after every update, holds update k when the observer
    stops the interrupted run, and the resume restores the model, AdamW, the iteration and the generator."""
    args = ("--observe", "--steps", "3", "--interrupt-at", "1", "--jobs", "2", "--train-cmd", LARGE)
    resume = ("--resume-cmd", LARGE + " --resume {checkpoint}", "--checkpoint", "{run}/ckpt.pt")
    proc, doc, _ = verification(tmp_path_factory, "large-bf16", *args, *resume)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert [c["passed"] for c in checks(doc, "restore")] == [True]
    assert doc["negative_divergence_detected"] and doc["determinism"]["deterministic"] is True
    checked = doc["trajectories"]["interrupted"]["check"]
    assert checked["verdict"] == "accepted" and checked["path"].endswith("ckpt.pt")


def test_a_preemptible_script_stopped_by_sigterm_resumes_exactly(tmp_path_factory):
    resume = PREEMPTIBLE + " --from {checkpoint}"
    extra = ("--stop", "sigterm", "--faults", "scheduler")
    proc, doc, _ = observed(tmp_path_factory, "preemptible", PREEMPTIBLE, resume, "{run}/step-{step}", *extra)
    assert proc.returncode == 0, proc.stderr[-3000:]
    # The fault blocks the LambdaLR's load_state_dict: the resume of its own --forget-schedule bug (the schedule built
    # again and never loaded), caught at its first resumed update with the scheduler named.
    scheduler = doc["faults"]["scheduler"]
    assert scheduler["detected"] and not scheduler["identical_to_full_resume"]
    assert scheduler["diagnosis"]["lost"] == "scheduler"
    # Its own numpy Generator comes back through `bit_generator.state`, which the control blocks; nothing draws from it
    # after update 3 within the run (its next epoch's permutation), so the control is without power, and says so.
    (control,) = checks(doc, "negative-control")
    assert control["passed"] and "without power" in control["name"] and "PCG64.state" in control["name"]
    assert not doc["negative_divergence_detected"]


def test_a_lightning_cli_script_resumes_exactly_through_the_preset(tmp_path_factory):
    args = ("--observe", "--preset", "lightning", "--steps", "6", "--interrupt-at", "3", "--jobs", "2")
    proc, doc, _ = verification(tmp_path_factory, "lightning", *args, "--train-cmd", LIGHTNING)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert [c["passed"] for c in checks(doc, "restore")] == [True] and doc["negative_divergence_detected"]


def test_a_lightning_script_on_a_plain_dataloader_restarts_its_epoch_and_the_data_position_is_named(tmp_path_factory):
    """Lightning cannot save a plain DataLoader's position (docs/audit.md, L2): it only warns, and the resumed epoch
    starts from its first batch again."""
    args = ("--observe", "--preset", "lightning", "--steps", "6", "--interrupt-at", "3", "--jobs", "2")
    proc, doc, _ = verification(
        tmp_path_factory, "lightning-bug", *args, "--train-cmd", LIGHTNING + " --data.stateful false"
    )
    assert proc.returncode == 1, proc.stderr[-3000:]
    (restore,) = checks(doc, "restore")
    assert not restore["passed"] and restore["diagnosis"]["lost"] == "data"
    assert "the continuous run's batch of update 1" in restore["diagnosis"]["explanation"]


@pytest.fixture(scope="module")
def ddp(tmp_path_factory):
    return observed(tmp_path_factory, "ddp", DDP, DDP + " --resume {checkpoint}", "{run}/step-{step}")


@pytest.mark.xdist_group("observe-ddp")
def test_a_ddp_script_under_torchrun_is_watched_on_every_rank_and_resumes_exactly(ddp):
    proc, doc, _ = ddp
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert doc["negative_divergence_detected"]  # the setters blocked in every worker
    assert doc["trajectories"]["interrupted"]["check"]["verdict"] == "accepted"


@pytest.mark.xdist_group("observe-ddp")
def test_a_ddp_script_that_restores_rank_0s_generator_on_every_rank_is_caught_on_rank_1(tmp_path_factory, ddp):
    """The bug is in its resume alone: the correct script's torchrun runs are reused (every rank's records)."""
    resume = DDP + " --resume {checkpoint} --rank0-generator"
    reuse = ("--reuse-runs", str(ddp[2]))
    proc, doc, _ = observed(tmp_path_factory, "ddp-bug", DDP, resume, "{run}/step-{step}", *reuse)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert doc["trajectories"]["interrupted"]["reused_from"] == str(ddp[2])
    (restore,) = checks(doc, "restore")
    assert restore["diagnosis"]["lost"] == "rng-torch" and restore["diagnosis"]["explanation"].startswith("rank 1: ")
    assert "(rank 1)" in restore["detail"] and "(rank 0)" not in restore["detail"]


def small(tmp_path_factory, name: str, seed: str, jitter: str) -> str:
    """A small script's command: `seed` its seeding (or none), `jitter` what each process adds to its gradient."""
    script = tmp_path_factory.mktemp(name) / f"{name}.py"
    script.write_text(SMALL_SCRIPT.replace("SEED", seed).replace("JITTER", jitter))
    return f"{PY} -B {shlex.quote(str(script))} {{run}} {{steps}}"


def test_required_determinism_fails_a_script_that_differs_from_itself_blames_no_part_and_checks_its_restore(
    tmp_path_factory,
):
    train = small(tmp_path_factory, "unseeded", seed="", jitter="0")
    extra = ("--require-deterministic",)
    proc, doc, _ = observed(tmp_path_factory, "unseeded", train, train + " {checkpoint}", "{run}/{step}.pt", *extra)
    assert proc.returncode == 1 and "NOT DETERMINISTIC" in proc.stderr, proc.stderr[-3000:]
    assert doc["determinism"]["deterministic"] is False and doc["comparison"] == {}
    assert doc["determinism"]["spread"] is None and "continuous-repeat-2" not in doc["trajectories"]
    assert [c["passed"] for c in checks(doc, "restore")] == [True]  # what it restored is what it held
    assert not any(c.get("diagnosis") for c in doc["checks"])


def test_within_atol_a_script_that_rounds_differently_in_every_process_passes_on_measured_values(tmp_path_factory):
    """Bit for bit it differs from itself; within --atol its repeat and its resume are compared on the values the
    observer kept, the gap is measured, and the negative control still diverges beyond it."""
    train = small(tmp_path_factory, "jittery", seed="torch.manual_seed(0)", jitter="jitter")
    extra = ("--atol", "1e-9", "--faults", "optimizer")
    proc, doc, _ = observed(tmp_path_factory, "jittery", train, train + " {checkpoint}", "{run}/{step}.pt", *extra)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert doc["tolerance"]["atol"] == 1e-9 and checks(doc, "determinism")[0]["name"].endswith("within atol 1e-09")
    resumed = doc["comparison"]["resumes"]["resumed"]
    assert 0 < resumed["max_state_deviation"] <= 1e-9 and resumed["verdict"] == "concordant"
    assert [c["passed"] for c in checks(doc, "restore")] == [True]  # the restore stays bit for bit
    assert doc["negative_divergence_detected"] and doc["faults"]["optimizer"]["detected"]


EPOCHS = """
import os, sys, torch
torch.set_num_threads(1); torch.set_default_dtype(torch.float64); torch.manual_seed(0)
run, steps = sys.argv[1], int(sys.argv[2])
x = torch.linspace(-1, 1, 24).reshape(12, 2)
order = torch.Generator().manual_seed(0)
loader = torch.utils.data.DataLoader(
    torch.utils.data.TensorDataset(x, x.sum(1, keepdim=True).sin()), batch_size=4, shuffle=True, generator=order
)
model = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
done = 0
if len(sys.argv) > 3:
    saved = torch.load(sys.argv[3], weights_only=True)
    model.load_state_dict(saved["model"]); optimizer.load_state_dict(saved["optimizer"])
    order.set_state(saved["order"]); done = saved["done"]
os.makedirs(run, exist_ok=True)
skip = done % len(loader)
while done < steps:
    start = order.get_state()  # the epoch's order is drawn from it when its iterator starts
    for i, (inputs, targets) in enumerate(loader):
        if i < skip:
            continue
        optimizer.zero_grad(); torch.nn.functional.mse_loss(model(inputs), targets).backward(); optimizer.step()
        done += 1
        # The bug: at an epoch's end this saves the order that epoch was drawn from, not the next one's.
        state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "order": start, "done": done}
        torch.save(state, f"{run}/{done}.pt")
        if done == steps:
            break
    skip = 0
"""


def test_epochs_read_off_the_dataloader_iterators_find_a_bug_that_only_an_epoch_boundary_shows(tmp_path_factory):
    """`--interrupt-at epochs` with no history: the boundaries are where the script made a new DataLoader iterator
    (3 batches an epoch: k = 3), with a point inside each epoch (1, 4). Mid-epoch the resume is exact; at the
    boundary the script replays the finished epoch's order, and the data position is named."""
    script = tmp_path_factory.mktemp("epochs") / "epochs.py"
    script.write_text(EPOCHS)
    train = f"{PY} -B {shlex.quote(str(script))} {{run}} {{steps}}"
    args = ["--observe", "--steps", "6", "--interrupt-at", "epochs", "--jobs", "2", "--train-cmd", train]
    args += ["--resume-cmd", train + " {checkpoint}", "--checkpoint", "{run}/{step}.pt"]
    proc, doc, _ = verification(tmp_path_factory, "epochs", *args)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert sorted(doc["interrupt_at"]) == [1, 3, 4]
    verdicts = {c["trajectory"]: c["passed"] for c in checks(doc, "restore")}
    assert verdicts == {"resumed": True, "resumed-3": False, "resumed-4": True}
    (failed,) = [c for c in checks(doc, "restore") if not c["passed"]]
    assert failed["diagnosis"]["lost"] == "data" and failed["diagnosis"]["step"] == 4
