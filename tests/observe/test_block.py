"""What the observer does to a process when the verifier asks (`verify --observe`): it ends an interrupted run
after update K (right before K+1's step, or by SIGTERM to the trainer's own handler), and it turns restores into
no-ops that answer as the real ones would. Each case is a small script run as a fresh process."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

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


GENERATORS = """
import copy, json, pickle, random
import numpy as np
import torch

def check(make, draw, get, restore):
    # restore a generator to where it was before a draw: restored, or kept drawing where it was, as its twin does
    one, twin = make(), make()
    saved, first = get(one), draw(one)
    draw(twin)
    answer = restore(one, saved)
    after = draw(one)
    kept = "restored" if after == first else "kept" if after == draw(twin) else "other"
    return kept, "itself" if answer is one else repr(answer)

def set_bits(gen, saved):
    gen.bit_generator.state = saved

def torch_draw(g):
    return torch.randn(3, generator=g).tolist()

def numpy_draw(gen):
    return gen.random(3).tolist()

restores = {
    "torch.Generator": check(
        lambda: torch.Generator(device="cpu").manual_seed(0), torch_draw, lambda g: g.get_state(),
        lambda g, s: g.set_state(s),
    ),
    "default_rng": check(lambda: np.random.default_rng(0), numpy_draw, lambda g: g.bit_generator.state,
                         set_bits),
    **{
        name: check(lambda: np.random.Generator(getattr(np.random, name)(0)), numpy_draw,
                    lambda g: g.bit_generator.state, set_bits)
        for name in ("PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64")
    },
    "RandomState": check(lambda: np.random.RandomState(0), lambda r: r.rand(3).tolist(), lambda r: r.get_state(),
                         lambda r, s: r.set_state(s)),
    "random.Random": check(lambda: random.Random(0), lambda r: r.random(), lambda r: r.getstate(),
                           lambda r, s: r.setstate(s)),
}
g, rng, r = torch.Generator().manual_seed(1), np.random.default_rng(1), random.Random(1)
legacy = np.random.RandomState(1)

def loader(gen):
    return [b.tolist() for b in torch.utils.data.DataLoader(range(8), batch_size=4, shuffle=True, generator=gen)]

works = {  # every other use of a generator, as with the real classes
    "isinstance": isinstance(torch.default_generator, torch.Generator) and isinstance(g, torch._C.Generator),
    "issubclass": issubclass(torch._C.Generator, torch.Generator)
    and issubclass(np.random.mtrand.RandomState, np.random.RandomState),
    "randperm": torch.randperm(6, generator=torch.Generator().manual_seed(1)).tolist(),
    "DataLoader": loader(torch.Generator().manual_seed(2)) == loader(torch._C.Generator().manual_seed(2)),
    "RandomSampler": sorted(torch.utils.data.RandomSampler(range(5))) == list(range(5)),
    "device": torch.Generator(device="cpu").device.type,
    "torch copy": torch.equal(torch.randn(2, generator=copy.deepcopy(g)), torch.randn(2, generator=g)),
    "default_rng": np.random.default_rng(7).random(2).tolist(),
    "numpy state": rng.bit_generator.state["bit_generator"],
    "numpy copy": copy.deepcopy(rng).random() == pickle.loads(pickle.dumps(rng)).random() == rng.random(),
    "numpy passed": np.random.default_rng(rng) is rng and isinstance(np.random.mtrand._rand, np.random.RandomState),
    "jumped": [np.random.Generator(getattr(np.random, n)(3).jumped()).random() for n in ("PCG64", "MT19937", "Philox")],
    "RandomState copy": copy.deepcopy(legacy).rand() == legacy.rand(),
    "random copy": copy.deepcopy(r).random() == pickle.loads(pickle.dumps(r)).random() == r.random(),
}
own = {  # torch's, NumPy's and Python's own classes and functions, untouched
    "torch.Generator": torch.Generator is torch._C.Generator,
    "numpy.random.PCG64": np.random.PCG64 is np.random._pcg64.PCG64,
    "numpy.random.RandomState": np.random.RandomState is np.random.mtrand.RandomState,
    "numpy.random.default_rng": np.random.default_rng is np.random._generator.default_rng,
    "random.Random.setstate": random.Random.__dict__["setstate"].__module__ == "random",
}
print(json.dumps({"restores": restores, "works": works, "own": own}))
model = torch.nn.Linear(1, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
model(torch.ones(1, 1)).sum().backward()
optimizer.step()
"""
OBJECT_SETTERS = [  # what the negative control records for each generator object's setter
    "Generator.set_state", "MT19937.state", "PCG64.state", "PCG64DXSM.state", "Philox.state", "Random.setstate",
    "RandomState.set_state", "SFC64.state",
]  # fmt: skip


def generators(tmp_path: Path, **asked: str) -> tuple[dict, dict]:
    tmp_path.mkdir(exist_ok=True)
    proc, record = run(tmp_path, GENERATORS, **asked)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout), record


@pytest.mark.parametrize("asked", [{}, {o.BLOCK_ENV: "model,optimizer"}], ids=["no block", "faults only"])
def test_without_rng_blocking_generator_classes_are_their_libraries_own_and_every_restore_works(tmp_path, asked):
    seen, record = generators(tmp_path, **asked)
    assert all(seen["own"].values()), seen["own"]
    assert {kind: kept for kind, (kept, _) in seen["restores"].items()} == dict.fromkeys(seen["restores"], "restored")
    assert record["blocked"] == []


def test_each_generator_objects_blocked_restore_keeps_it_drawing_where_it_was_and_is_recorded_once(tmp_path):
    seen, record = generators(tmp_path, **{o.BLOCK_ENV: o.RNG_SETTERS})
    assert {kind: kept for kind, (kept, _) in seen["restores"].items()} == dict.fromkeys(seen["restores"], "kept")
    assert sorted(record["blocked"]) == OBJECT_SETTERS
    assert not any(seen["own"].values()), seen["own"]  # replaced, in this process alone


def test_a_blocked_generator_answers_and_works_as_the_real_one_does(tmp_path):
    """`set_state` returns the generator, the others None; isinstance, DataLoader, copies and pickles, default_rng's
    stream bit for bit: the same with and without the block."""
    real, _ = generators(tmp_path / "real")
    blocked, _ = generators(tmp_path / "blocked", **{o.BLOCK_ENV: o.RNG_SETTERS})
    answers = {kind: answer for kind, (_, answer) in blocked["restores"].items()}
    assert answers == {kind: answer for kind, (_, answer) in real["restores"].items()}
    assert answers["torch.Generator"] == "itself" and answers["random.Random"] == "None"
    assert blocked["works"] == real["works"] and all(real["works"].values()), blocked["works"]
    assert real["works"]["numpy state"] == "PCG64"
