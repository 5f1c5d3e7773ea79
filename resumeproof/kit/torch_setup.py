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
"""

import os
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

SHORTCUTS_TESTED_ON = ("2.13",)  # torch major.minor releases the suite ran the shortcuts on
STOCK_ENV = "RESUMEPROOF_STOCK_TORCH"  # set to 1 to take the stock path whatever the version
SHORTCUTS, STOCK = "shortcuts", "stock"


@dataclass(frozen=True)
class Setup:
    path: str  # SHORTCUTS or STOCK
    threads: int
    dtype: str


def configure(threads: int = 1, dtype: torch.dtype = torch.float64, shortcuts: bool = True) -> Setup:
    """`shortcuts=False` takes the stock path whatever the version: for frameworks, which use TorchDynamo."""
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
    return Setup(path, torch.get_num_threads(), str(torch.get_default_dtype()).removeprefix("torch."))


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
