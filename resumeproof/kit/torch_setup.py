"""Set torch up for an exact, eager, single-threaded run, with two start-up shortcuts guarded by version.

Both shortcuts avoid importing TorchDynamo (about 0.9 s, a large share of a short run) in a process
that never compiles anything:
- torch.optim imports `torch._dynamo` the first time an optimizer is built, only to call
  `graph_break()` and `disable(fn)`; outside `torch.compile` both leave eager execution as it is,
  so a stand-in providing just these two changes no number. Anything else touching the stand-in
  raises AttributeError: a torch that needs more fails loudly instead of computing differently.
- `torch.use_deterministic_algorithms(True)` imports the inductor config (and TorchDynamo with it)
  to configure a compiler the run never uses; the private `torch._C._set_deterministic_algorithms`
  sets only the eager flag.
Both touch private APIs, so they run only on the torch versions the test suite ran them on (and
found bit-identical to the stock path); everywhere else, or with RESUMEPROOF_STOCK_TORCH=1, the
stock calls run. `Setup.path` says which ran, for the summary's `meta`.

On CUDA (`device="cuda"`) an exact run needs more, all through public APIs: cuBLAS must use a
fixed workspace (`CUBLAS_WORKSPACE_CONFIG=:4096:8`, read when CUDA starts, so it is set before or
refused after), cuDNN must not benchmark (a timing race picks the algorithm), and TF32 is off
unless asked for (it changes float32 matmuls and convolutions). `Setup.cuda` records what was set.
"""

import os
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from resumeproof.common.errors import ResumeproofError

SHORTCUTS_TESTED_ON = ("2.13",)  # torch major.minor releases the suite ran the shortcuts on
STOCK_ENV = "RESUMEPROOF_STOCK_TORCH"  # set to 1 to take the stock path whatever the version
SHORTCUTS, STOCK = "shortcuts", "stock"
CUBLAS_ENV = "CUBLAS_WORKSPACE_CONFIG"
CUBLAS_DETERMINISTIC = (":4096:8", ":16:8")  # the values deterministic cuBLAS accepts; the first is set
DEVICES = ("cpu", "cuda")


class SetupError(ResumeproofError):
    """torch cannot be set up for an exact run on the device asked for."""


@dataclass(frozen=True, kw_only=True)
class CudaSetup:
    """What configure() set for an exact CUDA run."""

    cublas_workspace_config: str  # CUBLAS_WORKSPACE_CONFIG as cuBLAS will read it
    cudnn_deterministic: bool  # torch.backends.cudnn.deterministic
    cudnn_benchmark: bool  # torch.backends.cudnn.benchmark (always False)
    tf32: bool  # torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.allow_tf32


@dataclass(frozen=True)
class Setup:
    path: str  # SHORTCUTS or STOCK
    threads: int
    dtype: str
    device: str = "cpu"  # "cpu" or "cuda"
    cuda: CudaSetup | None = None  # the CUDA settings, on a CUDA run


def configure(
    threads: int = 1,
    dtype: torch.dtype = torch.float64,
    shortcuts: bool = True,
    *,
    device: str | torch.device = "cpu",
    tf32: bool = False,
) -> Setup:
    """`shortcuts=False` takes the stock path whatever the version: for frameworks, which use TorchDynamo.
    `device="cuda"` also sets up cuBLAS, cuDNN and TF32 for an exact run (`tf32=True` keeps TF32 on)."""
    kind = torch.device(device).type
    if kind not in DEVICES:
        raise SetupError(f"configure_torch(device={str(device)!r}): an exact run is set up for {' or '.join(DEVICES)}")
    cublas = _cublas_workspace() if kind == "cuda" else None  # refused before anything is changed
    torch.set_num_threads(threads)
    torch.set_default_dtype(dtype)
    set_flag = getattr(torch._C, "_set_deterministic_algorithms", None)
    if shortcuts and shortcuts_allowed() and set_flag is not None:
        set_flag(True)
        if "RANK" not in os.environ:  # under torchrun, DDP and FSDP2 use TorchDynamo itself (torch._dynamo.utils)
            _skip_dynamo_import()
        path = SHORTCUTS
    else:
        torch.use_deterministic_algorithms(True)
        path = STOCK
    cuda = None if cublas is None else _configure_cuda(cublas, tf32)
    dtype_name = str(torch.get_default_dtype()).removeprefix("torch.")
    return Setup(path, torch.get_num_threads(), dtype_name, device=kind, cuda=cuda)


def _cublas_workspace() -> str:
    """CUBLAS_WORKSPACE_CONFIG set to a deterministic value while CUDA has not started, or a SetupError."""
    if not torch.cuda.is_available():
        raise SetupError(f"configure_torch(device='cuda'): CUDA is not available (torch {torch.__version__})")
    current = os.environ.get(CUBLAS_ENV)
    if current in CUBLAS_DETERMINISTIC:
        return current
    shown = f"{CUBLAS_ENV}={current}" if current is not None else f"{CUBLAS_ENV} unset"
    if torch.cuda.is_initialized():
        raise SetupError(
            f"CUDA started with {shown}, so cuBLAS is not deterministic: call kit.configure_torch(device='cuda') "
            f"before anything touches CUDA, or run with {CUBLAS_ENV}={CUBLAS_DETERMINISTIC[0]}"
        )
    if current is not None:
        raise SetupError(f"{shown}: an exact run needs {' or '.join(CUBLAS_DETERMINISTIC)}; unset it or set one")
    os.environ[CUBLAS_ENV] = CUBLAS_DETERMINISTIC[0]
    return CUBLAS_DETERMINISTIC[0]


def _configure_cuda(cublas: str, tf32: bool) -> CudaSetup:
    """cuDNN deterministic without benchmarking, TF32 as asked (deterministic algorithms are already on)."""
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    return CudaSetup(
        cublas_workspace_config=cublas,
        cudnn_deterministic=torch.backends.cudnn.deterministic,
        cudnn_benchmark=torch.backends.cudnn.benchmark,
        tf32=tf32,
    )


def shortcuts_allowed() -> bool:
    release = ".".join(torch.__version__.split("+")[0].split(".")[:2])
    return release in SHORTCUTS_TESTED_ON and os.environ.get(STOCK_ENV) != "1"


def _graph_break() -> None:
    """Eager mode has no graph to break."""


def _disable(fn: Callable[..., Any] | None = None, recursive: bool = True, **_: Any) -> Any:
    """Eager mode never traces, so there is nothing to disable: return the function as it is."""
    return fn if fn is not None else (lambda f: f)


def _skip_dynamo_import() -> None:
    """Register the stand-in unless the real TorchDynamo is already loaded (then it is used)."""
    if "torch._dynamo" in sys.modules:
        return
    stand_in = types.ModuleType("torch._dynamo", "Eager-only stand-in, see resumeproof.kit.torch_setup.")
    stand_in.graph_break = _graph_break  # type: ignore[attr-defined]
    stand_in.disable = _disable  # type: ignore[attr-defined]
    sys.modules["torch._dynamo"] = stand_in
    torch._dynamo = stand_in
