"""kit.torch_setup: the two private-API shortcuts run only on tested torch versions and change no number; the
exact-CUDA set-up is refused where it cannot hold, and records what it set (CUDA faked: tests/cuda/ has the real)."""

import json
import os
import subprocess
import sys

import pytest
import torch

from resumeproof.kit import torch_setup
from tests.helpers import REPO

COMPARED = ("step", "history", "state", "next", "eval")


def train(output, stock: bool, steps: int = 10) -> subprocess.CompletedProcess:
    env = {**os.environ, torch_setup.STOCK_ENV: "1"} if stock else {**os.environ}
    env.pop(torch_setup.STOCK_ENV, None) if not stock else None
    argv = [sys.executable, "-B", "train.py", "--steps", str(steps), "--output", str(output)]
    return subprocess.run(argv, cwd=REPO, capture_output=True, text=True, env=env)


def test_the_stock_path_and_the_shortcuts_give_bit_identical_runs_and_meta_says_which_ran(continuous_run, tmp_path):
    proc = train(tmp_path / "stock", stock=True)
    assert proc.returncode == 0, proc.stderr
    stock = json.loads((tmp_path / "stock" / "summary.json").read_text())
    fast = json.loads((continuous_run / "summary.json").read_text())
    for key in COMPARED:
        assert stock[key] == fast[key], key  # exact equality, not a tolerance
    assert stock["meta"]["checkpoint_sha256"] == fast["meta"]["checkpoint_sha256"]
    assert (stock["meta"]["torch_setup"], fast["meta"]["torch_setup"]) == (torch_setup.STOCK, torch_setup.SHORTCUTS)


SHOW_DYNAMO = (
    "import runpy, sys\n"
    "sys.argv = ['train.py', '--steps', '2', '--output', sys.argv[1]]\n"
    "try:\n    runpy.run_path('train.py', run_name='__main__')\n"
    "except SystemExit:\n    pass\n"
    "print(sorted(m for m in sys.modules if m.startswith('torch._dynamo')))\n"
)


def test_the_shortcut_path_never_imports_dynamo_and_the_stock_path_does(tmp_path):
    for stock, expected in ((False, "['torch._dynamo']"), (True, "real")):
        env = {**os.environ, torch_setup.STOCK_ENV: "1" if stock else "0"}
        argv = [sys.executable, "-B", "-c", SHOW_DYNAMO, str(tmp_path / f"r{stock}")]
        proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, env=env)
        assert proc.returncode == 0, proc.stderr
        modules = proc.stdout.strip()
        if expected == "real":
            assert modules.count("torch._dynamo") > 5, modules  # the real package, with its submodules
        else:
            assert modules == expected  # only the stand-in, none of the real package


@pytest.mark.parametrize(
    ("version", "allowed"), [("2.13.0+cpu", True), ("2.13.1", True), ("2.14.0", False), ("2.12.1", False)]
)
def test_shortcuts_run_only_on_the_torch_releases_the_suite_tested(monkeypatch, version, allowed):
    monkeypatch.setattr(torch_setup.torch, "__version__", version)
    monkeypatch.delenv(torch_setup.STOCK_ENV, raising=False)
    assert torch_setup.shortcuts_allowed() is allowed


def test_the_environment_can_force_the_stock_path(monkeypatch):
    monkeypatch.setenv(torch_setup.STOCK_ENV, "1")
    assert not torch_setup.shortcuts_allowed()


def test_configure_for_cuda_without_cuda_is_refused(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(torch_setup.SetupError, match="CUDA is not available"):
        torch_setup.configure(device="cuda")


@pytest.mark.parametrize("current", [None, ":0:0"])
def test_configure_for_cuda_refuses_when_cuda_started_without_a_deterministic_cublas_workspace(monkeypatch, current):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: True)
    if current is None:
        monkeypatch.delenv(torch_setup.CUBLAS_ENV, raising=False)
    else:
        monkeypatch.setenv(torch_setup.CUBLAS_ENV, current)
    dtype, threads = torch.get_default_dtype(), torch.get_num_threads()
    with pytest.raises(torch_setup.SetupError) as refused:
        torch_setup.configure(threads=threads + 1, dtype=torch.float16, device="cuda")
    message = str(refused.value)
    assert "CUDA started" in message and "CUBLAS_WORKSPACE_CONFIG=:4096:8" in message and "\n" not in message
    assert os.environ.get(torch_setup.CUBLAS_ENV) == current  # nothing was changed
    assert (torch.get_default_dtype(), torch.get_num_threads()) == (dtype, threads)


def test_configure_for_cuda_refuses_a_nondeterministic_cublas_workspace_before_cuda_starts(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: False)
    monkeypatch.setenv(torch_setup.CUBLAS_ENV, ":0:0")
    with pytest.raises(torch_setup.SetupError, match="CUBLAS_WORKSPACE_CONFIG=:0:0: an exact run needs :4096:8"):
        torch_setup.configure(device="cuda")


def test_configure_refuses_a_device_it_cannot_set_up_exactly():
    with pytest.raises(torch_setup.SetupError, match="'meta'"):
        torch_setup.configure(device="meta")


# configure() changes process-wide settings: each case runs in a fresh interpreter, CUDA faked where asked.
CONFIGURE = """
import dataclasses, json, os, sys
import torch
if sys.argv[1] == "cuda":
    torch.cuda.is_available = lambda: True
    torch.cuda.is_initialized = lambda: False
from resumeproof.kit import torch_setup
setup = torch_setup.configure(device=sys.argv[1], tf32=sys.argv[2] == "tf32")
print(json.dumps({
    "setup": dataclasses.asdict(setup), "env": os.environ.get("CUBLAS_WORKSPACE_CONFIG"),
    "deterministic": torch.are_deterministic_algorithms_enabled(), "benchmark": torch.backends.cudnn.benchmark,
    "cudnn_deterministic": torch.backends.cudnn.deterministic, "matmul_tf32": torch.backends.cuda.matmul.allow_tf32,
    "cudnn_tf32": torch.backends.cudnn.allow_tf32, "dtype": str(torch.get_default_dtype()),
}))
"""


def configured(device: str, tf32: bool = False) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in (torch_setup.CUBLAS_ENV, torch_setup.STOCK_ENV)}
    argv = [sys.executable, "-B", "-c", CONFIGURE, device, "tf32" if tf32 else "exact"]
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=REPO, env=env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_configure_for_cuda_sets_the_cublas_workspace_cudnn_and_tf32_and_records_them():
    got = configured("cuda")
    assert got["env"] == ":4096:8" and got["deterministic"] and got["dtype"] == "torch.float64"
    settings = (got["benchmark"], got["cudnn_deterministic"], got["matmul_tf32"], got["cudnn_tf32"])
    assert settings == (False, True, False, False)
    assert got["setup"]["device"] == "cuda"
    assert got["setup"]["cuda"] == {
        "cublas_workspace_config": ":4096:8",
        "cudnn_deterministic": True,
        "cudnn_benchmark": False,
        "tf32": False,
    }


def test_configure_for_cuda_keeps_tf32_on_when_asked():
    got = configured("cuda", tf32=True)
    assert got["matmul_tf32"] and got["cudnn_tf32"] and got["setup"]["cuda"]["tf32"] is True


def test_configure_on_cpu_touches_no_cuda_setting():
    flags = ["cudnn.benchmark", "cudnn.deterministic", "cuda.matmul.allow_tf32", "cudnn.allow_tf32"]
    show = f"import json, torch; print(json.dumps([{', '.join(f'torch.backends.{flag}' for flag in flags)}]))"
    stock = json.loads(subprocess.run([sys.executable, "-B", "-c", show], capture_output=True, text=True).stdout)
    got = configured("cpu")
    assert [got["benchmark"], got["cudnn_deterministic"], got["matmul_tf32"], got["cudnn_tf32"]] == stock
    assert got["env"] is None and got["setup"]["device"] == "cpu" and got["setup"]["cuda"] is None
    assert got["deterministic"] and got["setup"]["threads"] == 1 and got["setup"]["dtype"] == "float64"
