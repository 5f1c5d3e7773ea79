"""`verify --reuse-runs PREVIOUS` on an unmodified script: a variant whose bug is in its --resume-cmd copies the
continuous and interrupted runs of the correct variant's verification and gets the verdict and diagnosis it gets
when it runs everything; a module the script imports, touched since, makes them run again, the file named; a
PREVIOUS that cannot be used is refused in one line, before anything is written."""

import shlex
import sys

import pytest

from tests.helpers import run_verify, verification

pytestmark = pytest.mark.xdist_group("reuse-runs")  # the module's fixture runs once

SCRIPT = """
import os, sys, torch
from helper import model_for
torch.set_num_threads(1); torch.set_default_dtype(torch.float64); torch.manual_seed(0)
run, steps = sys.argv[1], int(sys.argv[2])
model = model_for()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
done = 0
if len(sys.argv) > 3:
    saved = torch.load(sys.argv[3], weights_only=True)
    model.load_state_dict(saved["model"]); optimizer.load_state_dict(saved["optimizer"]); done = saved["done"]
    if "--forget-rng" not in sys.argv:
        torch.set_rng_state(saved["rng"])
os.makedirs(run, exist_ok=True)
x = torch.linspace(-1, 1, 8).reshape(4, 2)
for done in range(done + 1, steps + 1):
    optimizer.zero_grad(); model(x).pow(2).mean().backward(); optimizer.step()
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "rng": torch.get_rng_state()}
    torch.save({**state, "done": done}, f"{run}/{done}.pt")
"""
HELPER = """
import torch
def model_for():
    return torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.Dropout(0.5), torch.nn.Linear(8, 1))
"""
ARGS = ("--observe", "--steps", "4", "--interrupt-at", "2", "--jobs", "2", "--checkpoint", "{run}/{step}.pt")


@pytest.fixture(scope="module")
def script(tmp_path_factory):
    folder = tmp_path_factory.mktemp("script")
    (folder / "train.py").write_text(SCRIPT)
    (folder / "helper.py").write_text(HELPER)
    return folder


def command(folder, *resume: str) -> tuple[str, ...]:
    train = f"{shlex.quote(sys.executable)} -B {shlex.quote(str(folder / 'train.py'))} {{run}} {{steps}}"
    return (*ARGS, "--train-cmd", train, "--resume-cmd", " ".join((train, "{checkpoint}", *resume)))


@pytest.fixture(scope="module")
def correct(tmp_path_factory, script):
    proc, _, out = verification(tmp_path_factory, "correct", *command(script))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


def judged(doc: dict) -> list[tuple]:
    """What a verification decided: every check's kind, trajectory, outcome and diagnosis."""
    return [(c["kind"], c["trajectory"], c["passed"], c.get("diagnosis")) for c in doc["checks"]]


def test_a_bug_in_the_resume_command_reuses_the_correct_runs_and_is_judged_as_when_it_ran_them(
    tmp_path_factory, script, correct
):
    proc, reused, _ = verification(tmp_path_factory, "bug", *command(script, "--forget-rng"), "--reuse-runs", correct)
    assert proc.returncode == 1, proc.stderr[-3000:]
    runs = reused["trajectories"]
    assert {n for n, t in runs.items() if t.get("reused_from")} == {"continuous", "continuous-repeat", "interrupted"}
    assert runs["resumed"]["not_reused"] == "its command differs"
    said = f"reused from {correct}: continuous, continuous-repeat, interrupted; ran again: resumed (its command"
    assert said in " ".join(proc.stderr.split()), proc.stderr
    alone = verification(tmp_path_factory, "bug-alone", *command(script, "--forget-rng"))[1]
    assert judged(reused) == judged(alone) and reused["verdict"] == alone["verdict"]
    (restore,) = [c for c in reused["checks"] if c["kind"] == "restore"]
    assert restore["diagnosis"]["lost"] == "rng-torch"


def test_a_module_the_script_imports_touched_since_makes_every_run_run_again_naming_it(
    tmp_path_factory, script, correct
):
    """The last test of the module to read `correct`: its runs are no one's to reuse once the helper changed."""
    helper = script / "helper.py"
    helper.write_text(HELPER + "\n")  # one byte more, the same code: only a stat can tell
    proc, doc, _ = verification(tmp_path_factory, "touched", *command(script), "--reuse-runs", correct)
    assert proc.returncode == 0, proc.stderr[-3000:]
    runs = doc["trajectories"]
    assert not any(t.get("reused_from") for t in runs.values())
    assert runs["continuous"]["not_reused"] == f"{helper} changed since"
    assert runs["resumed"]["not_reused"] == "interrupted ran again"


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (("--no-observe",), "--reuse-runs: needs the observer"),
        (("--reuse-runs", "{out}"), "is this verification's own --output"),
        (("--reuse-runs", "{script}"), "not a verification's output folder (no readable verification.json)"),
    ],
    ids=["no-observer", "itself", "not-a-verification"],
)
def test_a_previous_run_that_cannot_be_used_is_refused_naming_why_and_nothing_is_written(tmp_path, script, extra, said):
    out = tmp_path / "v"
    given = [e.format(out=out, script=script) for e in extra]
    reuse = [] if "--reuse-runs" in given else ["--reuse-runs", str(script)]
    proc = run_verify("--output", str(out), "--train-cmd", "python -B train.py", *reuse, *given)
    assert proc.returncode == 2 and said in proc.stderr.strip().splitlines()[-1], proc.stderr
    assert not out.exists()
