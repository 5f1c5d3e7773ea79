"""What many tests share: the repository's paths, fresh-process runners (train.py, torchrun, the verifier), a
run's summary.json, a schema-checked verification.json, damaged checkpoints' building blocks."""

import builtins
import functools
import json
import os
import pickle
import shlex
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from resumeproof.common import losslog, protocol
from tests.fuzz import zipwriter
from tests.fuzz.pickles import RunsCode  # torch-free: fuzz workers import it too

REPO = Path(__file__).resolve().parent.parent
TRAINERS = Path(__file__).resolve().parent / "trainers"
TRAIN = REPO / "train.py"
RAY_GROUP = "ray"  # the xdist group of the tests on the Ray cluster (tests/conftest.py ends it after them)
EXAMPLES = REPO / "examples"
FRAMEWORK_EXAMPLES = {  # the adapters' examples, and the plain loop beside them
    "plain": EXAMPLES / "plain_dataloader.py",
    "accelerate": EXAMPLES / "accelerate_example.py",
    "lightning": EXAMPLES / "lightning_example.py",
    "transformers": EXAMPLES / "transformers_example.py",
}
TORCHRUN = (sys.executable, "-m", "torch.distributed.run")
LAUNCH_TIMEOUT = 300  # generous: four ranks on two shared cores


def code_that_touches(how: str, marker: Path) -> RunsCode:
    if how == "os.system":
        return RunsCode(os.system, f"touch {shlex.quote(str(marker))}")
    return RunsCode(builtins.exec, f"open({str(marker)!r}, 'w').close()")


def rewrite_metadata(folder: Path, change: Callable[[Any], object]) -> None:
    """Change a DCP checkpoint's (trusted, just written) `.metadata` object and write it back with a matching
    sidecar: an attacker who can write the checkpoint can write its sidecar too."""
    from resumeproof.common import manifest
    from resumeproof.common.dcp_files import METADATA

    path = folder / METADATA
    metadata = pickle.loads(path.read_bytes())
    change(metadata)
    path.write_bytes(pickle.dumps(metadata, protocol=4))
    manifest.write(folder)


def rewrite_records(src: Path, dst: Path, change: dict[str, Callable[[bytes], bytes | None]]) -> None:
    """Copy a torch archive with the torch-exact writer, passing the records named in `change` through their
    function: new bytes, or None to drop the record."""
    prefix, records = zipwriter.read(src.read_bytes())
    assert set(change) <= {r.name for r in records}, sorted(r.name for r in records)
    kept = []
    for record in records:
        data = change.get(record.name, lambda data: data)(record.data)
        if data is not None:
            kept.append(zipwriter.Record(record.name, data))
    dst.write_bytes(zipwriter.write(kept, zipwriter.Layout(prefix=prefix)))


def dcp_state() -> dict[str, Any]:
    """A small state for DCP: tensors of three dtypes, a bool tensor, and JSON carried in a tensor."""
    import torch

    from resumeproof.kit.distributed import dcp_io

    return {
        "model": {
            "w": torch.arange(6.0).reshape(2, 3),
            "n": torch.arange(4),
            "half": torch.ones(3, dtype=torch.bfloat16),
        },
        "flags": torch.tensor([True, False]),
        "extra": dcp_io.json_tensor({"step": 3, "lr": 0.1 + 0.2, "pcg": 2**127 + 1}),
    }


def dcp_saved(tmp_path: Path, state: dict | None = None) -> Path:
    """A DCP directory of `state` (dcp_state() by default) written by stock dcp.save in this process, with the
    protocol's sidecar."""
    import warnings

    import torch.distributed.checkpoint as dcp

    from resumeproof.common import manifest

    folder = tmp_path / protocol.CHECKPOINT
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "torch.distributed is ... uninitialized, assuming ... a single process"
        dcp.save(state or dcp_state(), storage_writer=dcp.FileSystemWriter(folder))
    manifest.write(folder)
    return folder


# DCP directories DCP never writes, refused alike by the trainer and the verifier: how each is made -> the reason both
# give, and the option that would let the verifier accept it anyway.
DCP_TAMPERED = {
    "os.system": ("names posix.system, outside the DCP allowlist", "--allow-unsafe-pickle"),
    "exec": ("names builtins.exec, outside the DCP allowlist", "--allow-unsafe-pickle"),
    "non-tensor": (
        "holds non-tensor items, which stock dcp.load reads with weights_only=False",
        "--allow-unsafe-pickle",
    ),
    "outside": ("data file '../elsewhere.distcp' is not a __R_N.distcp name of this folder", "--allow-opaque"),
}


def dcp_tampered(tmp_path: Path, how: str) -> tuple[Path, Path]:
    """A DCP directory made as DCP_TAMPERED says, signed again as its attacker would, and the marker file its payload
    (os.system, exec) would create: a `.metadata` that runs code, an item stock dcp.load reads with weights_only=False
    (non-tensor), a storage entry naming a data file outside the folder."""
    import torch

    marker = tmp_path / "ran"
    if how == "non-tensor":
        return dcp_saved(tmp_path, {"w": torch.zeros(2), "step": 3}), marker
    folder = dcp_saved(tmp_path)
    if how == "outside":

        def change(metadata: Any) -> None:
            next(iter(metadata.storage_data.values())).relative_path = "../elsewhere.distcp"

    else:

        def change(metadata: Any) -> None:
            metadata.storage_meta.modules.append(code_that_touches(how, marker))

    rewrite_metadata(folder, change)
    return folder, marker


@functools.cache
def _schema_validator() -> Any:
    import jsonschema

    schema = json.loads((REPO / "docs" / "verification.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def read_verification(path: Path) -> dict[str, Any]:
    """A verification.json, validated against the schema docs/verification.schema.json publishes."""
    document = json.loads(path.read_text())
    errors = sorted(_schema_validator().iter_errors(document), key=lambda e: list(e.path))
    assert not errors, [f"{list(e.path)}: {e.message}" for e in errors[:5]]
    return document


def run_script(script: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """A fresh interpreter, as the verifier runs trainers: `python -B SCRIPT ARGS`."""
    return subprocess.run(
        [sys.executable, "-B", str(script), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
    )


def run_train(*args: str) -> subprocess.CompletedProcess:
    return run_script(REPO / "train.py", *args)


def start_train(*args: str) -> subprocess.Popen:
    """train.py started, not waited for: a test signals it or starts a second one beside it."""
    argv = [sys.executable, "-B", str(TRAIN), *args]
    return subprocess.Popen(argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for_steps(run: Path, count: int, proc: subprocess.Popen, timeout: float = 30) -> None:
    """Until `count` updates are logged: the trainer is running, past its start-up."""
    log, deadline = run / losslog.NAME, time.monotonic() + timeout
    while not (log.exists() and log.read_text().count('"loss"') >= count):
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        assert time.monotonic() < deadline, "the trainer never got going"
        time.sleep(0.02)


def kept_generations(run: Path) -> list[str]:
    """The names of the generations (`step_NNNNNN.pt`) a run directory holds, oldest first."""
    return sorted(p.name for p in run.glob("step_*.pt"))


def summary(run: Path) -> dict[str, Any]:
    """A run directory's summary.json."""
    return json.loads((run / protocol.SUMMARY).read_text())


def identical(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Two summaries equal in everything the verifier compares (every key but meta), value for value."""
    return all(a[key] == b[key] for key in protocol.COMPARED_KEYS)


def assert_same_run(run: Path, reference: Path) -> None:
    """The run resumed exactly: its summary equals the reference's in everything the verifier compares."""
    got, expected = summary(run), summary(reference)
    differ = [key for key in protocol.COMPARED_KEYS if got[key] != expected[key]]
    assert not differ, f"{run} differs from {reference} in {differ}"


def launch(world: int, *extra: str, script: Path = TRAIN) -> list[str]:
    """torchrun with `world` processes on this machine, each running `script`."""
    return [*TORCHRUN, "--standalone", "--nproc-per-node", str(world), str(script), *extra]


def command(world: int, *extra: str, script: Path = TRAIN) -> str:
    return shlex.join(launch(world, *extra, script=script))


def torchrun(argv: list[str], timeout: float = LAUNCH_TIMEOUT) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=timeout)


def flat(*args: Any) -> subprocess.CompletedProcess:
    """`resumeproof flat ARGS` in a fresh process (export needs torch, inspect does not)."""
    argv = [sys.executable, "-B", "-m", "resumeproof", "flat", *map(str, args)]
    return subprocess.run(argv, cwd=REPO, capture_output=True, text=True)


def run_verify(*args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    return run_script(REPO / "verify_resume.py", *args, timeout=timeout)


def verification(tmp_path_factory, name: str, *args: str) -> tuple[subprocess.CompletedProcess, dict, Path]:
    """A verification run once for a module's fixture: the process, its verification.json ({} without one), its
    output directory."""
    out = tmp_path_factory.mktemp("verification") / name
    proc = run_verify("--output", str(out), *args, timeout=2 * LAUNCH_TIMEOUT)
    report = out / "verification.json"
    return proc, read_verification(report) if report.is_file() else {}, out


def reusing(tmp_path_factory, *shared: str) -> Callable[..., tuple[subprocess.CompletedProcess, dict, Path]]:
    """The verifications of one family (variants of a trainer whose bugs are in their --resume-cmd): the first that
    writes a verification.json runs every trajectory; each later one passes --reuse-runs its folder, and runs only
    what differs (verify/run/reuse.py). Every call's arguments follow `shared`."""
    first: list[Path] = []

    def verified(name: str, *args: str) -> tuple[subprocess.CompletedProcess, dict, Path]:
        reuse = ("--reuse-runs", str(first[0])) if first else ()
        proc, doc, out = verification(tmp_path_factory, name, *shared, *args, *reuse)
        if doc and not first:
            first.append(out)
        return proc, doc, out

    return verified


def trained(tmp_path_factory, name: str, steps: int) -> Path:
    """The directory of one successful `train.py --steps STEPS` run."""
    out = tmp_path_factory.mktemp("session") / name
    proc = run_train("--steps", str(steps), "--output", out)
    assert proc.returncode == 0, proc.stderr
    return out


def free_ports(count: int) -> list[int]:
    """`count` ports nothing listens on now (held together, so that they differ)."""
    held = [socket.socket() for _ in range(count)]
    for s in held:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in held]
    for s in held:
        s.close()
    return ports


# A small unmodified script for `verify --observe`: its run folder, its length, and a checkpoint to resume from as
# arguments; SEED its seeding (or none), JITTER what each process adds to its gradient (0: nothing).
SMALL_SCRIPT = """
import os, sys, torch
torch.set_num_threads(1); torch.set_default_dtype(torch.float64)
SEED
run, steps = sys.argv[1], int(sys.argv[2])
model = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.Dropout(0.5), torch.nn.Linear(8, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
done = 0
if len(sys.argv) > 3:
    saved = torch.load(sys.argv[3], weights_only=True)
    model.load_state_dict(saved["model"]); optimizer.load_state_dict(saved["optimizer"])
    torch.set_rng_state(saved["rng"]); done = saved["done"]
os.makedirs(run, exist_ok=True)
x = torch.linspace(-1, 1, 8).reshape(4, 2)
jitter = int.from_bytes(os.urandom(4), "little") / 2**32 * 1e-12  # each process its own rounding, as atomics do
for done in range(done + 1, steps + 1):
    optimizer.zero_grad(); (model(x).pow(2).mean() + JITTER * model[0].weight.sum()).backward(); optimizer.step()
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "rng": torch.get_rng_state()}
    torch.save({**state, "done": done}, f"{run}/{done}.pt")
"""
