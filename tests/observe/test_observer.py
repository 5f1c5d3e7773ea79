"""The observer inside a training process, as the verifier injects it: what it records, the restores it sees, and a
failure it keeps to itself. Each case is a small loop run as a fresh process with the observer's environment."""

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from resumeproof.common import observation as o
from tests.helpers import REPO

pytestmark = pytest.mark.xdist_group("observer")  # its module fixture (one recorded run) is made once

LOOP = """
import random, sys
import numpy as np
import torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(2, 4), torch.nn.Dropout(0.5), torch.nn.Linear(4, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
scaler = torch.amp.GradScaler("cpu", init_scale=8.0)
x = torch.linspace(-1, 1, 16).reshape(8, 2)
np.random.seed(1)
random.seed(2)
torch.set_rng_state(torch.get_rng_state())  # a restore, before update 1
for step in range(4):
    rows = np.random.permutation(8)[:4]
    loss = model(x[rows]).pow(2).mean() * (float("inf") if step == 2 and "skip" in sys.argv else 1.0)
    optimizer.zero_grad()
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    scheduler.step()
"""


def run(tmp_path: Path, *args: str, updates: set[int] = frozenset({1, 2, 3, 4}), code: str = LOOP) -> dict:
    script = tmp_path / "loop.py"
    script.write_text(code)
    record = tmp_path / "records"
    env = o.environment({**os.environ, "PYTHONPATH": ""}, record, updates)
    proc = subprocess.run([sys.executable, "-B", str(script), *args], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return json.loads(o.record_file(record, None).read_text())


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> dict:
    return run(tmp_path_factory.mktemp("observer"))


def test_every_asked_update_is_recorded_with_its_moments_in_order(recorded):
    assert recorded["format"] == o.FORMAT and recorded["failed"] is None
    assert sorted(recorded["updates"], key=int) == ["1", "2", "3", "4"]
    assert list(recorded["updates"]["2"]) == [o.START, o.FORWARD, o.LOSS, o.STEP, o.AFTER]
    assert o.START not in recorded["updates"]["1"]  # the process's first update has no update before it


def test_what_each_update_consumes_changes_as_training_does(recorded):
    one, two = recorded["updates"]["1"], recorded["updates"]["2"]
    assert one[o.FORWARD][o.MODEL] != two[o.FORWARD][o.MODEL]  # the step changed the weights
    assert one[o.AFTER][o.PARAMS] == {key: two[o.FORWARD][o.MODEL][key] for key in one[o.AFTER][o.PARAMS]}
    assert one[o.FORWARD][o.BATCH] != two[o.FORWARD][o.BATCH]  # another permutation's rows
    # the dropout draws between the forward pass and the step; NumPy's global draws before the forward pass
    assert one[o.FORWARD][o.GENERATORS][o.GLOBAL]["torch"] != one[o.AFTER][o.GENERATORS][o.GLOBAL]["torch"]
    assert two[o.START][o.GENERATORS][o.GLOBAL]["numpy"] != two[o.FORWARD][o.GENERATORS][o.GLOBAL]["numpy"]


def test_the_loss_is_the_one_handed_to_the_gradscaler_unscaled_and_its_state_is_seen(recorded):
    loss = recorded["updates"]["1"][o.LOSS]
    assert loss[o.SCALE] == 8.0 and 0 < loss[o.VALUE] < 10  # unscaled: the scaler multiplies it by 8 afterwards
    step = recorded["updates"]["3"][o.STEP]
    assert step[o.SCALERS] == [{"scale": 8.0, "growth_tracker": 2}]
    assert [list(s) for s in step[o.SCHEDULERS]] == [["StepLR"]]
    assert [g["lr"] for u in "1234" for g in recorded["updates"][u][o.STEP][o.GROUPS]] == [0.1, 0.1, 0.05, 0.05]


def test_restores_and_seeds_are_kept_with_the_update_they_come_before(recorded):
    restored = {(r["group"], r["generator"], r["before"]) for r in recorded["restores"]}
    assert {("global", "torch", 1), ("global", "numpy", 1), ("global", "python", 1)} <= restored


def test_a_step_the_gradscaler_skips_still_counts_as_an_update(tmp_path):
    records = run(tmp_path, "skip")
    assert sorted(records["updates"], key=int) == ["1", "2", "3", "4"]
    skipped = records["updates"]["3"]
    assert skipped[o.AFTER][o.PARAMS] == records["updates"]["4"][o.FORWARD][o.MODEL] == skipped[o.FORWARD][o.MODEL]


BROKEN = """
class Broken(torch.nn.Sequential):
    def named_buffers(self, *args, **kwargs):
        raise RuntimeError("no state here")
"""


def test_a_failure_inside_the_observer_is_written_down_and_never_reaches_the_trainer(tmp_path):
    records = run(tmp_path, code=LOOP.replace("model = torch.nn.Sequential(", BROKEN + "model = Broken("))
    assert records["failed"].startswith("forward_pre: RuntimeError: no state here")
    assert records["updates"] == {"1": {}}  # what it had when it stopped; the loop itself ran to its end


def test_without_the_verifiers_environment_nothing_is_loaded(tmp_path):
    probe = "import sys, torch; print(sorted(m for m in sys.modules if m.startswith('_resumeproof')))"
    env = {**os.environ, "PYTHONPATH": str(o.SITE)}
    env.pop(o.OBSERVE_ENV, None)
    proc = subprocess.run([sys.executable, "-B", "-c", probe], env=env, capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "[]"
    env[o.OBSERVE_ENV] = str(tmp_path / "r")
    watched = subprocess.run([sys.executable, "-B", "-c", probe], env=env, capture_output=True, text=True, check=True)
    assert "_resumeproof_observe_observer" in watched.stdout


def test_another_sitecustomize_still_runs_first(tmp_path):
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "sitecustomize.py").write_text(f"open({str(tmp_path / 'ran')!r}, 'w').close()\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(o.SITE), str(theirs)]), o.OBSERVE_ENV: str(tmp_path / "r")}
    subprocess.run([sys.executable, "-B", "-c", "pass"], env=env, check=True, cwd=REPO)
    assert (tmp_path / "ran").exists()


SET_UP = """
for p in model.parameters():
    p.grad = torch.zeros_like(p)
optimizer.step()
optimizer.zero_grad()
"""


def test_a_step_without_a_forward_or_backward_pass_is_no_update(tmp_path):
    """DCP's set_state_dict initializes a fresh optimizer's state with a step of zero gradients at lr 0: not one of
    the run's updates, which would shift every update after it."""
    records = run(tmp_path, code=LOOP.replace("for step in range(4):", SET_UP + "for step in range(4):"))
    assert sorted(records["updates"], key=int) == ["1", "2", "3", "4"]
    assert all(o.FORWARD in records["updates"][n] and o.STEP in records["updates"][n] for n in "1234")


EVALUATING = """
model.register_buffer("seen", torch.zeros(1), persistent=False)  # in no state_dict
for step in range(4):
    rows = np.random.permutation(8)[:4]
    model.seen += 1
    loss = model(x[rows]).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    with torch.no_grad():
        model.eval()
        model(x)  # an evaluation between two steps: the same rows every time
        model.train()
"""


def test_the_batch_is_the_training_forward_passs_and_the_model_holds_every_buffer(tmp_path):
    loop = LOOP[: LOOP.index("for step in range(4):")] + EVALUATING
    records = run(tmp_path, code=loop)
    batches = {records["updates"][n][o.FORWARD][o.BATCH] for n in "1234"}
    assert len(batches) == 4  # the evaluation's constant batch would repeat from update 2 on
    seen = [records["updates"][n][o.FORWARD][o.MODEL]["seen"] for n in "1234"]
    assert len(set(seen)) == 4  # the non-persistent buffer, as it enters each update


def test_each_record_names_its_fingerprints_and_the_optimizer_state_is_digested_per_tensor(recorded):
    assert recorded[o.FINGERPRINT] == {"cpu": "xxh3-128", "device": "pk128/1"}
    state = recorded["updates"]["2"][o.STEP][o.OPTIMIZER]
    assert sorted(state) == [f"{n}.{key}" for n in range(4) for key in ("exp_avg", "exp_avg_sq", "step")]
    assert recorded["updates"]["1"][o.STEP][o.OPTIMIZER] == {}  # no state before Adam's first step
    three = recorded["updates"]["3"][o.STEP][o.OPTIMIZER]
    assert all(three[key] != state[key] for key in state)  # every tensor moved in update 2


def test_the_environment_names_the_interpreter_the_versions_and_each_file_of_the_scripts_code(tmp_path):
    """What a resume by other code is told apart by (records/versions.py): the script and the modules it loaded from
    its folder, by their path from there, each with its sha256; not the interpreter's packages (torch), the observer
    injected into the process, nor the verification's output (here the folder two above the record)."""
    code = LOOP.replace("import torch\n", "import torch\nimport helper\n", 1)
    (tmp_path / "helper.py").write_text("SCALE = 1.0\n")
    (tmp_path / "loop.py").write_text(code)
    record = tmp_path / "verification" / "observed" / "continuous"
    record.parent.mkdir(parents=True)
    env = o.environment({**os.environ, "PYTHONPATH": ""}, record, {1})
    proc = subprocess.run([sys.executable, "-B", str(tmp_path / "loop.py")], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    environment = o.read(o.record_file(record, None)).environment
    assert environment is not None
    assert (environment.executable, environment.script) == (sys.executable, str(tmp_path / "loop.py"))
    assert environment.torch.startswith("2.") and environment.python.count(".") == 2
    digests = {
        name: hashlib.sha256(text.encode()).hexdigest()
        for name, text in (("helper.py", "SCALE = 1.0\n"), ("loop.py", code))
    }
    assert environment.code == digests
