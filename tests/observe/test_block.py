"""What the observer does to a process when the verifier asks (`verify --observe`): it ends an interrupted run
after update K (right before K+1's step, or by SIGTERM to the trainer's own handler), and it turns restores into
no-ops that answer as the real ones would. Each case is a small script run as a fresh process."""

import json
import os
import subprocess
import sys
from pathlib import Path

from resumeproof.common import observation as o

LOOP = """
import signal, sys
import torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(2, 4), torch.nn.Dropout(0.5), torch.nn.Linear(4, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
x = torch.linspace(-1, 1, 16).reshape(8, 2)
asked = []
signal.signal(signal.SIGTERM, lambda *a: asked.append(True))
for step in range(1, 7):
    def closure():
        optimizer.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        return loss
    if "closure" in sys.argv:
        optimizer.step(closure)
    else:
        closure()
        optimizer.step()
    print("saved", step, flush=True)
    if asked:
        print("handler saved and exited", flush=True)
        sys.exit(0)
"""

RESTORES = """
import random
import numpy as np
import torch
torch.manual_seed(0)
model = torch.nn.Linear(2, 1)
other = torch.nn.Linear(2, 1)
optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 0.5**step)
states = torch.get_rng_state(), random.getstate(), np.random.get_state()
torch.rand(3), random.random(), np.random.rand()
torch.set_rng_state(states[0]); random.setstate(states[1]); np.random.set_state(states[2])
print("rng restored", torch.equal(torch.get_rng_state(), states[0]), random.getstate() == states[1])
keys = model.load_state_dict(other.state_dict())
print("model restored", torch.equal(model.weight, other.weight), list(keys.missing_keys))
scheduler.load_state_dict({**scheduler.state_dict(), "last_epoch": 7})
print("scheduler restored", scheduler.last_epoch == 7)
optimizer.load_state_dict(optimizer.state_dict())  # not a scheduler's: never blocked with one
model(torch.ones(1, 2)).sum().backward()
optimizer.step()
"""


def run(tmp_path: Path, code: str, *args: str, **asked: str) -> tuple[subprocess.CompletedProcess, dict]:
    script = tmp_path / "script.py"
    script.write_text(code)
    record = tmp_path / "records"
    env = {**o.environment({**os.environ, "PYTHONPATH": ""}, record, asked.pop("updates", "1-6")), **asked}
    proc = subprocess.run([sys.executable, "-B", str(script), *args], env=env, capture_output=True, text=True)
    return proc, json.loads(o.record_file(record, None).read_text())


def test_exit_ends_the_run_after_update_k_and_records_the_inputs_of_the_update_it_never_took(tmp_path):
    proc, record = run(tmp_path, LOOP, **{o.STOP_ENV: "exit:3"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[:-1] == ["saved 1", "saved 2", "saved 3"]  # update 3's save ran, nothing after
    assert (record["stopped"], record["completed"]) == (3, 3)
    assert list(record["updates"]["4"]) == [o.START, o.FORWARD, o.LOSS, o.STEP]  # no step taken: no `after`


def test_under_a_closure_the_run_ends_at_the_loss_of_update_k_plus_1_with_its_forward_pass_recorded(tmp_path):
    """Lightning and LBFGS step first and run the forward pass inside the step."""
    proc, record = run(tmp_path, LOOP, "closure", **{o.STOP_ENV: "exit:2"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[:-1] == ["saved 1", "saved 2"] and record["stopped"] == 2
    assert {o.FORWARD, o.LOSS, o.STEP} <= set(record["updates"]["3"]) and o.AFTER not in record["updates"]["3"]


def test_sigterm_after_update_k_lets_the_trainers_own_handler_save_and_exit(tmp_path):
    proc, record = run(tmp_path, LOOP, **{o.STOP_ENV: "sigterm:2"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[:-1] == ["saved 1", "saved 2", "handler saved and exited"]
    assert (record["stopped"], record["completed"]) == (2, 2)


def test_without_a_block_every_restore_works_and_nothing_is_recorded_as_blocked(tmp_path):
    proc, record = run(tmp_path, RESTORES)
    assert "rng restored True True" in proc.stdout and "model restored True []" in proc.stdout, proc.stderr
    assert "scheduler restored True" in proc.stdout and record["blocked"] == []


def test_blocked_generator_setters_change_nothing_and_each_call_is_recorded(tmp_path):
    proc, record = run(tmp_path, RESTORES, **{o.BLOCK_ENV: o.RNG_SETTERS})
    assert proc.returncode == 0 and "rng restored False False" in proc.stdout, proc.stderr
    assert sorted(record["blocked"]) == ["numpy.random.set_state", "random.setstate", "torch.set_rng_state"]
    assert [r["generator"] for r in record["restores"] if r["before"] == 1] == ["torch"]  # manual_seed alone


def test_a_blocked_load_state_dict_answers_its_caller_as_the_real_one_would(tmp_path):
    """Module.load_state_dict returns its key report; LambdaLR overrides load_state_dict and is covered."""
    proc, record = run(tmp_path, RESTORES, **{o.BLOCK_ENV: "model,scheduler"})
    assert proc.returncode == 0, proc.stderr
    assert "model restored False []" in proc.stdout and "scheduler restored False" in proc.stdout
    assert sorted(record["blocked"]) == ["LambdaLR.load_state_dict", "Module.load_state_dict"]


def test_a_process_that_steps_no_optimizer_writes_no_record_at_exit(tmp_path):
    """torchrun's launcher imports torch and trains nothing: only its workers' records may be read."""
    script = tmp_path / "launcher.py"
    script.write_text("import torch\nprint('launched')\n")
    record = tmp_path / "records"
    env = o.environment({**os.environ, "PYTHONPATH": ""}, record, "1-4")
    proc = subprocess.run([sys.executable, "-B", str(script)], env=env, capture_output=True, text=True)
    assert proc.returncode == 0 and "launched" in proc.stdout, proc.stderr
    assert not o.record_file(record, None).exists()
