"""observe/install.py as sitecustomize loads it: by its path, in a trainer whose environment lacks resumeproof. Its
type names for the observer (`if TYPE_CHECKING:`) are mypy's alone; at run time nothing of the package is imported."""

import json
import os
import subprocess
import sys

from resumeproof.common import observation as o

LOOP = """
import sys
sys.modules["resumeproof"] = None  # this trainer's environment has no resumeproof: any import of it fails
import torch
torch.manual_seed(0)
model = torch.nn.Linear(2, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(2):
    optimizer.zero_grad()
    model(torch.ones(3, 2)).pow(2).mean().backward()
    optimizer.step()
print(sorted(name for name in sys.modules if name.startswith("resumeproof")))
"""


def test_the_observer_watches_a_trainer_that_cannot_import_resumeproof(tmp_path):
    script, record = tmp_path / "loop.py", tmp_path / "records"
    script.write_text(LOOP)
    env = o.environment({**os.environ, "PYTHONPATH": ""}, record, {1, 2})
    proc = subprocess.run([sys.executable, "-B", str(script)], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "not watching" not in proc.stderr, proc.stderr
    assert proc.stdout.strip() == "['resumeproof']"  # the blocked entry alone: nothing of the package was loaded
    recorded = json.loads(o.record_file(record, None).read_text())
    assert recorded["failed"] is None and sorted(recorded["updates"]) == ["1", "2"]


GC = """
import gc, sys
if "off" in sys.argv:
    gc.disable()
import torch
print(gc.isenabled(), gc.get_freeze_count() > 0)
"""


def test_the_collector_is_paused_for_torchs_import_then_its_objects_are_frozen_and_it_is_set_back(tmp_path):
    """torch's import makes objects that live as long as the process: frozen, the collector never walks them again (a
    quarter of a small trainer's process). A trainer that turned the collector off keeps it off, and nothing frozen."""
    script = tmp_path / "gc.py"
    script.write_text(GC)
    env = o.environment({**os.environ, "PYTHONPATH": ""}, tmp_path / "records", {1})
    said = [
        subprocess.run([sys.executable, "-B", str(script), *args], env=env, capture_output=True, text=True, timeout=120)
        for args in ((), ("off",))
    ]
    assert [p.stdout.split() for p in said] == [["True", "True"], ["False", "False"]], [p.stderr for p in said]
    unwatched = subprocess.run([sys.executable, "-B", str(script)], capture_output=True, text=True, timeout=120)
    assert unwatched.stdout.split() == ["True", "False"]  # without the observer, torch's import freezes nothing
