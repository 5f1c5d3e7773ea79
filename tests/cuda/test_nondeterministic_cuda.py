"""A GPU trainer that is not deterministic (float32 atomics in `index_add_`, deterministic algorithms off), judged in
two tiers (docs/checks.md, "A trainer that is not deterministic"): its exact restore and its trajectory within its
measured spread pass, and every part a resume loses is caught at its restore and named; in both verifications.

    python -B -m pytest -n 0 tests/cuda          # on a machine with a CUDA GPU; collected nowhere else
"""

import json
import shlex
import subprocess
import sys
from pathlib import Path

from tests.helpers import REPO

VARIANT = (
    f"{shlex.quote(sys.executable)} -B -m benchmarks.gpu nondeterministic-trainer --device cuda --precision float32"
)

# An unmodified script: a model on the GPU whose forward pass adds 2**20 values into a few bins with atomics.
SCRIPT = """
import sys, torch
run, steps = sys.argv[1], int(sys.argv[2])
torch.manual_seed(0); torch.cuda.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.Dropout(0.2), torch.nn.Linear(32, 1)).cuda()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
values = torch.randn(2**20, device="cuda"); index = torch.arange(2**20, device="cuda") % 4
done = 0
if len(sys.argv) > 3:
    saved = torch.load(sys.argv[3], weights_only=True)
    model.load_state_dict(saved["model"]); optimizer.load_state_dict(saved["optimizer"])
    scheduler.load_state_dict(saved["scheduler"]); done = saved["done"]
    torch.set_rng_state(saved["rng"]); torch.cuda.set_rng_state(saved["cuda"])
import os; os.makedirs(run, exist_ok=True)
for done in range(done + 1, steps + 1):
    x = torch.randn(4, 8, device="cuda")
    bins = torch.zeros(4, device="cuda").index_add_(0, index, values)  # in the order the atomics arrive
    loss = (model(x).squeeze(1) - 1e-3 * bins).pow(2).mean()
    optimizer.zero_grad(); loss.backward(); optimizer.step(); scheduler.step()
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict()}
    state |= {"rng": torch.get_rng_state(), "cuda": torch.cuda.get_rng_state(), "done": done}
    torch.save(state, f"{run}/{done}.pt")
"""


def verify(out: Path, *args: str) -> tuple[subprocess.CompletedProcess, dict]:
    argv = [sys.executable, "-B", "verify_resume.py", "--output", str(out), "--jobs", "4", *args]
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=REPO, timeout=1200)
    report = out / "verification.json"
    return proc, json.loads(report.read_text()) if report.is_file() else {}  # plain json: no jsonschema needed


def test_a_protocol_trainer_with_atomics_passes_within_its_spread_and_every_lost_part_is_named(tmp_path):
    proc, doc = verify(tmp_path / "tiers", "--faults", "all", "--train-cmd", VARIANT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert doc["deterministic"] is False and doc["determinism"]["spread"] is not None
    assert all(c["passed"] for c in doc["checks"] if c["kind"] == "restore")
    named = {part: (f["detected"], f["diagnosis"]["parts"]) for part, f in doc["faults"].items()}
    assert {"optimizer", "scheduler", "rng-cuda", "model"} <= set(named)
    assert all(detected and parts == [part] for part, (detected, parts) in named.items() if part != "progress"), named
    strict, _ = verify(tmp_path / "strict", "--require-deterministic", "--train-cmd", VARIANT)
    assert strict.returncode == 1 and "NOT DETERMINISTIC" in strict.stderr


def test_an_unmodified_script_with_atomics_passes_within_its_spread_under_observe_and_each_fault_is_named(tmp_path):
    script = tmp_path / "atomics.py"
    script.write_text(SCRIPT)
    train = f"{shlex.quote(sys.executable)} -B {shlex.quote(str(script))} {{run}} {{steps}}"
    args = ["--observe", "--steps", "6", "--interrupt-at", "3", "--faults", "optimizer,scheduler,model"]
    args += ["--train-cmd", train, "--resume-cmd", train + " {checkpoint}", "--checkpoint", "{run}/{step}.pt"]
    proc, doc = verify(tmp_path / "observe", *args)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert doc["deterministic"] is False and "continuous-repeat-2" in doc["trajectories"]
    assert [c["passed"] for c in doc["checks"] if c["kind"] == "restore"] == [True]
    named = {part: f["diagnosis"]["parts"] for part, f in doc["faults"].items()}
    assert named == {"optimizer": ["optimizer"], "scheduler": ["scheduler"], "model": ["model"]}
    assert doc["negative_divergence_detected"]
