"""Injected into every trajectory by resumeproof's verifier (first on PYTHONPATH): watch the training process.

At start-up it runs any other `sitecustomize` the interpreter would have run, then, only where the verifier asked
(common/observation.py's OBSERVE_ENV) or `resumeproof watch` did (common/watching.py's WATCH_ENV), waits for the
trainer to import torch and installs the observer (observe/install.py). Until then it costs a few milliseconds and
imports nothing heavy; a trainer that never imports torch is never touched. While torch itself is imported it pauses
Python's cyclic garbage collector, and then freezes what the import made (`gc.freeze`): objects that live as long as
the process, which the collector would walk to no end. Every module it loads is loaded by its path under a private
name, so a trainer's own resumeproof (of any version, or none) is left as it is. It never raises into the trainer."""

from __future__ import annotations  # `Observer` below is a name for mypy alone

import gc
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # for mypy alone: at run time observer.py is loaded by its path, as every module below
    from resumeproof.observe.observer import Observer

HERE = Path(__file__).resolve().parent
OBSERVE = HERE.parent  # resumeproof/observe/
PRIVATE = "_resumeproof_observe_"  # the prefix of the names its modules are loaded under
WATCHED = ("torch", "numpy.random", "resumeproof.kit.generators")  # the first installs the observer


def _load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(PRIVATE + name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # a dataclass looks its module up while it is built
    spec.loader.exec_module(module)
    return module


def _chain() -> None:
    """The sitecustomize this one stands in front of, if the interpreter has one: run it as it would have run."""
    later = [entry for entry in sys.path if entry and Path(entry).resolve() != HERE]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", later)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)


class _Watcher(importlib.abc.MetaPathFinder):
    """Calls `imported(name, module)` once each watched module has run, whoever imports it."""

    def __init__(self) -> None:
        self.observer: Observer | None = None
        self.installer: ModuleType  # observe/install.py and common/observation.py: set with the observer
        self.names: ModuleType
        self.early: dict[str, ModuleType] = {}  # watched modules imported before torch: patched once it is

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name not in WATCHED:
            return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = find(name, path, target) if finder is not self and find is not None else None
            if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
                spec.loader.exec_module = self._then(name, spec.loader.exec_module)
                return spec
        return None

    def _then(self, name: str, run: Any) -> Any:
        def exec_module(module: ModuleType) -> None:
            # torch's import makes about a million objects that live as long as the process: every collection of the
            # cyclic garbage collector walks them again and finds nothing, during the import and after it (a quarter
            # of a small trainer's process). Paused for the import, then those objects frozen (never walked again),
            # and the collector set back as it was. Nothing the trainer computes changes.
            paused = name == "torch" and gc.isenabled()
            if paused:
                gc.disable()
            try:
                run(module)
            finally:
                if paused:
                    gc.freeze()
                    gc.enable()
            self.imported(name, module)

        return exec_module

    def imported(self, name: str, module: ModuleType) -> None:
        try:
            if name == "torch" and self.observer is None:
                names = _load("observation", OBSERVE.parent / "common" / "observation.py")
                observer = _load("observer", OBSERVE / "observer.py")
                asked = os.environ.get(names.BLOCK_ENV)  # a process that blocks nothing never loads it
                block = _load("block", OBSERVE / "block.py") if asked else None
                fingerprint = _load("fingerprint", OBSERVE / "fingerprint.py")
                self.installer = _load("install", OBSERVE / "install.py")
                watch = _watch() if not os.environ.get(names.OBSERVE_ENV) else None  # a verifier's run: observed
                self.observer = self.installer.install(names, observer, block, fingerprint, os.environ, watch)
                self.names = names
                for early, loaded in self.early.items():
                    self.installer.imported(self.observer, self.names, early, loaded)
            elif self.observer is None:
                self.early[name] = module
            else:
                self.installer.imported(self.observer, self.names, name, module)
        except Exception as err:  # inside someone else's process: never raise into it
            print(f"resumeproof observer: not watching this process ({type(err).__name__}: {err})", file=sys.stderr)


def _watch() -> tuple[ModuleType, ModuleType]:
    """`resumeproof watch`'s two modules: observe/watch.py and its format, common/watching.py."""
    return _load("watch", OBSERVE / "watch.py"), _load("watching", OBSERVE.parent / "common" / "watching.py")


_chain()
# common/observation.py's OBSERVE_ENV (a verifier's trajectory) or common/watching.py's WATCH_ENV (a watched run), read
# before anything is loaded
if os.environ.get("RESUMEPROOF_OBSERVE") or os.environ.get("RESUMEPROOF_WATCH"):
    sys.meta_path.insert(0, _Watcher())
