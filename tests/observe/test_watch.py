"""observe/watch.py: a saved file is known by its content whichever way torch.save and torch.load were given it (a
path, an open file, an in-memory buffer a framework writes out whole, as Lightning does), and a loop that saves and
loads that way is judged as one that names paths; so is one that writes and reads safetensors files."""

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import torch

from resumeproof.cli.watch import environment
from resumeproof.common import watching
from resumeproof.observe import watch

# Saved as Lightning does (torch.save into a buffer, its bytes written to the file), loaded from an open file; a
# second start resumes. Its data draws from torch's generator after the restore, before the forward pass.
BUFFERED = """
import io, os, sys
import torch
out = sys.argv[1]
torch.manual_seed(0)
model = torch.nn.Linear(3, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
path = os.path.join(out, "last.ckpt")
if os.path.exists(path):
    with open(path, "rb") as f:
        state = torch.load(f, weights_only=True)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    if "keep-rng" in sys.argv:
        torch.set_rng_state(state["rng"])
for step in range(3):
    loss = model(torch.randn(4, 3)).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
buffer = io.BytesIO()
torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "rng": torch.get_rng_state()}, buffer)
with open(path, "wb") as f:
    f.write(buffer.getvalue())
"""


def test_a_file_is_known_by_its_bytes_as_a_path_an_open_file_or_a_buffer(tmp_path):
    path = tmp_path / "c.pt"
    buffer = io.BytesIO()
    torch.save({"w": torch.arange(5.0)}, buffer)
    path.write_bytes(buffer.getvalue())
    digest = watch._digest_of(path, written=False)
    assert digest is not None and watch._digest_of(buffer, written=True) == digest
    with path.open("rb") as f:
        f.seek(7)
        assert watch._digest_of(f, written=False) == digest and f.tell() == 7  # read from the start, position kept
    with (tmp_path / "d.pt").open("wb") as f:
        torch.save({"w": torch.arange(5.0)}, f)
        assert watch._digest_of(f, written=True) == digest  # flushed, then read back by its name
    read, write = os.pipe()
    with os.fdopen(read, "rb") as pipe:
        os.close(write)
        assert watch._digest_of(pipe, written=False) is None  # nothing to read back: no record, no claim
    assert watch._digest_of(tmp_path / "absent.pt", written=False) is None


def started_twice(tmp_path: Path, code: str, how: str) -> Path:
    """`code` run twice under the watch in TMP/HOW, given that folder and HOW: its watch folder."""
    script, run = tmp_path / "loop.py", tmp_path / how
    script.write_text(code)
    run.mkdir()
    env = environment(dict(os.environ), run / "watch", watching.WARN)
    for _ in range(2):
        done = subprocess.run([sys.executable, "-B", str(script), str(run), how], env=env, capture_output=True)
        assert done.returncode == 0, done.stderr
    return run / "watch"


def test_a_loop_that_saves_through_a_buffer_and_loads_from_an_open_file_is_judged_and_its_lost_generator_named(
    tmp_path,
):
    found = {keep: started_twice(tmp_path, BUFFERED, keep) for keep in ("keep-rng", "drop-rng")}
    found = {
        keep: [json.loads(line) for line in (run / watching.RESUMES).read_text().splitlines()]
        for keep, run in found.items()
    }
    assert [r["status"] for r in found["keep-rng"]] == [watching.EXACT]
    assert found["keep-rng"][0]["checkpoint"].endswith("last.ckpt") and found["keep-rng"][0]["saved_update"] == 3
    assert [r["status"] for r in found["drop-rng"]] == [watching.DIFFERS]
    assert [d["part"] for d in found["drop-rng"][0]["differences"]] == ["rng-torch"]


# The model saved with safetensors (as the transformers Trainer saves model.safetensors), the optimizer and the
# generator with torch.save; a second start resumes every file, or (`weights-only`) only the safetensors file.
SAFETENSORS = """
import os, sys
import torch
from safetensors.torch import load_file, save_file
out = sys.argv[1]
torch.manual_seed(0)
model = torch.nn.Linear(3, 1)
optimizer = torch.optim.AdamW(model.parameters(), lr=0.1)
weights, rest = os.path.join(out, "model.safetensors"), os.path.join(out, "rest.pt")
if os.path.exists(weights):
    model.load_state_dict(load_file(weights))
    if "weights-only" not in sys.argv:
        state = torch.load(rest, weights_only=True)
        optimizer.load_state_dict(state["optimizer"])
        torch.set_rng_state(state["rng"])
for step in range(3):
    loss = model(torch.randn(4, 3)).pow(2).mean()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
save_file(model.state_dict(), weights)
torch.save({"optimizer": optimizer.state_dict(), "rng": torch.get_rng_state()}, rest)
"""


def test_a_run_that_saves_its_weights_with_safetensors_is_judged_from_them_and_what_they_lack_named(tmp_path):
    """safetensors' writer and reader are watched as torch.save's and torch.load's (patched in the package when
    the trainer imports it, before the transformers Trainer binds `safe_open`): a restart that loads the weights
    alone is caught by that load, and the parts it left behind named; one that loads every file is exact."""
    found = {
        how: watching.read_restarts(started_twice(tmp_path, SAFETENSORS, how))[0] for how in ("whole", "weights-only")
    }
    assert [(r.status, r.checkpoint) for r in found["whole"]] == [(watching.EXACT, str(tmp_path / "whole/rest.pt"))]
    (alone,) = found["weights-only"]
    assert alone.status == watching.DIFFERS and alone.checkpoint == str(tmp_path / "weights-only/model.safetensors")
    assert [d["part"] for d in alone.differences] == ["optimizer", "rng-torch"]
    code = (
        "import torch\nfrom safetensors import safe_open as r, serialize_file as w\nprint(r.__qualname__, w.__name__)"
    )
    env = environment(dict(os.environ), tmp_path / "watch", watching.WARN)
    done = subprocess.run([sys.executable, "-B", "-c", code], env=env, capture_output=True, text=True)
    assert done.stdout.split() == ["_watch_safetensors.<locals>.safe_open", "serialize_file"], done.stderr


def test_dcp_is_watched_once_the_trainer_imports_it_and_never_imported_for_it(tmp_path):
    """Importing torch.distributed.checkpoint costs a process about 0.6 s: the watch patches its save and load when
    the trainer imports it, and a trainer that never does never pays for it. A DCP folder is named by its
    `.metadata`, which the coordinator writes last."""
    env = environment(dict(os.environ), tmp_path / "watch", watching.WARN)
    code = "import sys, torch; print('torch.distributed.checkpoint' in sys.modules)"
    done = subprocess.run([sys.executable, "-B", "-c", code], env=env, capture_output=True, text=True)
    assert (done.returncode, done.stdout.strip()) == (0, "False"), done.stderr
    code = "import torch.distributed.checkpoint as dcp; print(dcp.save.__qualname__, dcp.load.__qualname__)"
    done = subprocess.run([sys.executable, "-B", "-c", code], env=env, capture_output=True, text=True)
    assert done.stdout.split() == ["_watch_dcp.<locals>.saving", "_watch_dcp.<locals>.loading"], done.stderr
    folder = tmp_path / "step-4"
    folder.mkdir()
    assert watch._digest_of(folder, written=True) is None  # no `.metadata` yet: not a checkpoint
    (folder / ".metadata").write_bytes(b"metadata")
    assert watch._digest_of(folder, written=True) == watch._digest_of(folder / ".metadata", written=True)
    assert watch._dcp_folder({"checkpoint_id": str(folder)}) == folder
    assert watch._dcp_folder({"storage_writer": type("W", (), {"path": folder})()}) == folder
    assert watch._dcp_folder({"storage_reader": object()}) is None  # another store: nothing to fingerprint
