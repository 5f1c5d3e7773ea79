"""The observer: what one update of a training process consumed and produced, watched through torch's global hooks.

Installed by the injected `sitecustomize` (resumeproof/observe/site/) once the trainer imports torch, it counts
the process's updates (the first optimizer's steps; a step a GradScaler skips counts too) and, for the updates
`UPDATES_ENV` names, records the moments of common/observation.py: the generators, the batch entering the root
module, the model and its modules' plain attributes at the first forward pass, the target of the first loss
function and the loss handed to backward, the gradients, optimizer, LR schedulers, GradScalers and the other modules
the update called (a teacher) right before the step, and the parameters after it. Every generator restore is kept
with the update it came before. The trainer changes no line.

It runs inside someone else's process: it never raises into it. A hook that fails stops the recording and says
why in the record file (`failed`), and the verifier judges the trainer without it.
"""

import hashlib
import json
import math
import os
import platform
import random
import signal
import sys
import time
import weakref
from collections.abc import Callable, Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

Record = dict[str, Any]


class Observer:
    def __init__(
        self,
        names: ModuleType,
        fingerprint: ModuleType,
        record: str,
        wanted: frozenset[int],
        rank: int | None,
        stop: tuple[str, int] | None = None,
        values: bool = False,
    ) -> None:
        self.o, self.path, self.wanted, self.rank = names, names.record_file(record, rank), wanted, rank
        self.base = record  # the record file without suffix, every rank's (a hold's release is theirs together)
        self.f = fingerprint  # observe/fingerprint.py: every digest, computed where its tensor lives
        self.values = values  # keep what VALUED names by value too (observation.VALUES_ENV)
        self.stop = stop  # (how, K): end the process after its update K (common/observation.py's STOP_ENV)
        self.stopped: int | None = None  # K, once the process was ended (or signalled) there
        self.batch_pending = False  # the update's first forward pass started: its batch is read when it ends
        self.targeted = False  # the target of the update's first loss function was recorded
        self.others: dict[str, Record] = {}  # the update's other top-level modules with parameters, as called
        self.other_params: dict[str, list[torch.Tensor]] = {}  # their parameters, for the optimizer's hold on them
        self.names: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # module -> its name, found once
        self.halting = False  # update K+1's step came before its forward pass (a closure): end at its loss
        self.blocked: list[str] = []  # the restores observe/block.py turned into no-ops, as they were called
        self.blocking: tuple[ModuleType | None, bool] = (None, False)  # observe/block.py, and whether rng is blocked
        self.update = 1  # the update in progress, counted in this process
        self.records: dict[int, Record] = {}
        self.restores: list[Record] = []
        self.iterators: set[int] = set()  # the updates in progress when a DataLoader iterator was made
        self.failed: str | None = None
        self.depth = 0  # nested module forward passes in progress
        self.forwarded = self.lossed = self.stepped = False  # seen in the update in progress
        self.backwards = 0  # torch.autograd.backward calls in the update in progress: its micro-batches
        self.first: weakref.ref | None = None  # the optimizer whose steps count the updates
        self.root: weakref.ref | None = None  # the module the update's first forward pass entered
        self.schedulers: weakref.WeakSet = weakref.WeakSet()
        self.scalers: weakref.WeakSet = weakref.WeakSet()
        self.averaged: weakref.WeakSet = weakref.WeakSet()  # EMA and SWA models: state no forward pass may show
        self.kit_generators: weakref.WeakSet = weakref.WeakSet()
        self.sources: dict[str, list[int] | None] = {}  # SOURCES: each file once, when a write first sees it
        self.environment: Record | None = None  # ENVIRONMENT, found at the first last write
        self.watch: Any = None  # observe/watch.py under `resumeproof watch`: told once the first update's inputs are in

    # -- what is recorded ------------------------------------------------------------------------------------

    def now(self) -> Record | None:
        """The record of the update in progress, if it is one to record."""
        if self.failed is not None or self.update not in self.wanted:
            return None
        return self.records.setdefault(self.update, {})

    def generators(self) -> Record:
        digest = self.f.digest
        found: Record = {self.o.GLOBAL: {"python": digest(random.getstate()), "torch": digest(torch.get_rng_state())}}
        legacy = sys.modules.get("numpy.random")
        if legacy is not None:
            found[self.o.GLOBAL]["numpy"] = digest(legacy.get_state(legacy=False))
        if torch.cuda.is_initialized():
            found[self.o.GLOBAL]["cuda"] = digest(torch.cuda.get_rng_state_all())
        kit: Record = {}
        for generators in list(self.kit_generators):  # a trainer's own generators; the process-wide ones are above
            kit |= {n: state for n, state in self.kit_states(generators).items() if not _process_wide(generators[n])}
        if kit:
            found[self.o.KIT] = kit
        return found

    def kit_states(self, generators: Any) -> dict[str, str]:
        """The digest of each of a kit `Generators`' named generators."""
        return self.f.named(generators.state())

    def model(self) -> Record:
        """Every parameter and buffer of the root module, non-persistent buffers too (no state_dict holds them)."""
        root = self.root() if self.root is not None else None
        return self.tensors(root) if root is not None else {}

    def tensors(self, module: torch.nn.Module) -> Record:
        named = [*module.named_parameters(), *module.named_buffers()]
        return dict(zip([name for name, _ in named], self.f.digests([t for _, t in named]), strict=True))

    def attributes(self, root: torch.nn.Module) -> Record:
        """The plain attributes of every module of the trainer's own classes under the root (a counter, a switch, an
        annealed temperature, a tensor that is no buffer): state no state_dict holds, by value where it is small,
        named `ROOT.PATH.ATTRIBUTE`. torch's own modules keep none that training changes; a torch.nn.Module's own
        bookkeeping (its hooks, `training`) is left out."""
        found: Record = {}
        for path, module in root.named_modules():
            if type(module).__module__.startswith("torch."):
                continue
            for key, value in vars(module).items():
                if key not in _MODULE_INTERNALS and (plain := _attribute(value, self.f.digest)) is not _SKIP:
                    found[".".join(part for part in (self.name(root), path, key) if part)] = plain
        return found

    def name(self, module: torch.nn.Module) -> str:
        """What a module is called where the trainer holds it: its global name in the script, else its class's."""
        if module not in self.names:
            script = vars(sys.modules["__main__"]) if "__main__" in sys.modules else {}
            named = sorted(n for n, value in list(script.items()) if value is module and not n.startswith("_"))
            self.names[module] = named[0] if named else type(module).__name__
        return self.names[module]

    def optimizer_state(self, optimizer: torch.optim.Optimizer) -> Record:
        """Each tensor of the optimizer's per-parameter state by itself ("PARAM_INDEX.KEY", where a difference then
        shows), the param groups, LR schedulers, GradScalers and averaged models: the device's digests moved to the host
        at once."""
        state = {
            f"{n}.{key}": value
            for n, p in enumerate(_params(optimizer))
            for key, value in sorted(optimizer.state.get(p, {}).items(), key=lambda item: str(item[0]))
        }
        schedulers, averaged = list(self.schedulers), list(self.averaged)
        found = self.f.digests(
            [*state.values(), *(_schedule(s.state_dict()) for s in schedulers), *(m.state_dict() for m in averaged)]
        )
        after = len(state) + len(schedulers)
        groups = [{k: _plain(v) for k, v in g.items() if k != "params"} for g in optimizer.param_groups]
        return {
            self.o.OPTIMIZER: dict(zip(state, found, strict=False)),
            self.o.GROUPS: groups,
            self.o.SCHEDULERS: [
                {type(s).__name__: d} for s, d in zip(schedulers, found[len(state) : after], strict=True)
            ],
            self.o.AVERAGED: [{type(m.module).__name__: d} for m, d in zip(averaged, found[after:], strict=True)],
            self.o.SCALERS: [_scaler(s) for s in list(self.scalers) if s.is_enabled()],
            self.o.UNSEEN: _unseen(s for s in list(self.scalers) if s.is_enabled()),
            self.o.MODULES: self.outside(optimizer),
        }

    def outside(self, optimizer: torch.optim.Optimizer) -> Record:
        """The update's other modules (a teacher, an EMA kept by hand), as they were called, and whether this
        optimizer holds their parameters."""
        held = {id(p) for p in _params(optimizer)}
        optimized = {name: any(id(p) in held for p in params) for name, params in self.other_params.items()}
        return {name: {self.o.STATE: state, self.o.OPTIMIZED: optimized[name]} for name, state in self.others.items()}

    def keep(self, moment: str, key: str, value: Any) -> None:
        """Under VALUES_ENV: the tensors and numbers in `value`, as float64, in the order the digest reads them."""
        flat = torch.cat([torch.zeros(0, dtype=torch.float64), *_floats(value)])
        path = self.o.values_file(self.path, self.update, moment, key)
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(flat.numpy().tobytes())

    # -- the hooks ---------------------------------------------------------------------------------------------

    def forward_pre(self, module: torch.nn.Module, args: tuple) -> None:
        # The update's first forward pass that trains: an evaluation (no grad, or eval mode) between two steps, or a
        # frozen teacher, computes nothing the next step consumes.
        if self.depth == 0 and not self.forwarded and module.training and torch.is_grad_enabled():
            self.forwarded, self.root = True, weakref.ref(module)
            if (now := self.now()) is not None:
                now[self.o.FORWARD] = {self.o.GENERATORS: self.generators(), self.o.MODEL: self.model()}
                now[self.o.FORWARD][self.o.ATTRIBUTES] = self.attributes(module)
                self.batch_pending = True
            elif self.watch is not None and self.watch.awaiting:  # the batch of the update after a save
                self.batch_pending = True
        elif self.depth == 0 and self.now() is not None:
            self.other(module)
        self.depth += 1

    def other(self, module: torch.nn.Module) -> None:
        """A module the update calls beside its root, with parameters of its own and no AveragedModel (recorded as
        such): its state as the update consumes it, the first time it does."""
        root = self.root() if self.root is not None else None
        if module is root or module in self.averaged or next(module.parameters(), None) is None:
            return
        name = self.name(module)
        if name not in self.others:
            self.others[name], self.other_params[name] = self.tensors(module), list(module.parameters())

    def forward_post(self, module: torch.nn.Module, args: tuple, kwargs: dict, output: Any) -> None:
        # The batch is read here, where torch's global hooks also give the keyword arguments (`model(**batch)`, as
        # the transformers Trainer calls it); a forward pass leaves its inputs as they were.
        self.depth = max(0, self.depth - 1)
        if self.depth == 0 and self.batch_pending and self.root is not None and self.root() is module:
            self.batch_pending = False
            named = [kwargs[key] for key in sorted(kwargs) if isinstance(kwargs[key], torch.Tensor)]
            digest = self.f.digest([a for a in args if isinstance(a, torch.Tensor)] + named)
            if (now := self.now()) is not None and self.o.FORWARD in now:
                now[self.o.FORWARD][self.o.BATCH] = digest
            if self.watch is not None:
                self.watch.fed(digest)

    def target(self, computed: Any, target: Any) -> None:
        """A loss function's target (a class index, a regression target): the data the loss holds the model's output
        to, which no forward pass of the model takes. The update's first loss that trains (on a tensor that
        requires grad): an evaluation's loss between two steps is not the update's."""
        trains = isinstance(computed, torch.Tensor) and computed.requires_grad and torch.is_grad_enabled()
        if self.targeted or not trains or not isinstance(target, torch.Tensor):
            return
        self.targeted = True
        if (now := self.now()) is not None:
            now.setdefault(self.o.LOSS, {})[self.o.TARGET] = self.f.digest(target)

    def loss(self, tensor: Any, scale: float | None = None) -> None:
        if self.lossed or not isinstance(tensor, torch.Tensor):
            return
        self.lossed = True
        if (now := self.now()) is not None:
            value = tensor.detach().item() if tensor.numel() == 1 else None
            seen = {self.o.VALUE: value, self.o.DIGEST: self.f.digest(tensor), self.o.SCALE: scale}
            now.setdefault(self.o.LOSS, {}).update(seen)
            if self.watch is not None:  # a closure's forward pass came after the step's pre-hook
                self.watch.ready(now)
        if self.halting:
            self.halt()

    def backward(self) -> None:
        self.backwards += 1

    def step_pre(self, optimizer: torch.optim.Optimizer, args: tuple, kwargs: dict) -> None:
        if self.first is None:
            self.first = weakref.ref(optimizer)
        if self.first() is not optimizer or self.stepped:
            return
        if (now := self.now()) is not None:  # a closure (Lightning, LBFGS) runs the forward pass after this
            now[self.o.STEP] = self.optimizer_state(optimizer) | {self.o.BACKWARDS: self.backwards}
            if self.values:
                self.keep(self.o.STEP, self.o.OPTIMIZER, [optimizer.state.get(p, {}) for p in _params(optimizer)])
            if self.watch is not None:
                self.watch.ready(now)
        if self.stop is not None and self.stop == (self.o.EXIT, self.update - 1):
            if self.forwarded:
                self.halt()
            self.halting = True  # a closure: its forward pass and loss are still to come

    def step_post(self, optimizer: torch.optim.Optimizer, args: tuple, kwargs: dict) -> None:
        if self.first is None or self.first() is not optimizer or self.stepped:
            return
        if not (self.forwarded or self.lossed):  # no forward pass, no backward: no update (DCP's state set-up)
            if (now := self.now()) is not None:
                now.pop(self.o.STEP, None)
            return
        self.end_update(optimizer)

    def end_update(self, optimizer: torch.optim.Optimizer) -> None:
        """After the update's step (or the step a GradScaler skipped): its last moment, then the next update. The
        gradients are read here, where a step that runs a closure has computed them, and nothing cleared them."""
        self.stepped = True
        if (now := self.now()) is not None:
            root = self.root() if self.root is not None else None
            named = dict(root.named_parameters()) if root is not None else {}
            grads = [p.grad if p.grad is not None else "none" for p in _params(optimizer)]
            found = self.f.digests([grads, *named.values()])  # one transfer from the device for the moment
            if self.values:
                self.keep(self.o.AFTER, self.o.PARAMS, list(named.values()))
            params = dict(zip(named, found[1:], strict=True))
            now[self.o.AFTER] = {self.o.GENERATORS: self.generators(), self.o.GRADS: found[0], self.o.PARAMS: params}
            self.write(last=self.update == max(self.wanted))  # under torchrun a worker may leave by os._exit
        if self.stop == (self.o.SIGTERM, self.update):  # a preemption: the trainer's own handler saves and exits
            self.stopped = self.update
            self.write(last=True)
            os.kill(os.getpid(), signal.SIGTERM)
        if self.stop == (self.o.PAUSE, self.update):  # a job Slurm preempts: held while its signal lands
            self.write(last=True)
            self.hold()
        self.update += 1
        self.forwarded = self.lossed = self.stepped = self.targeted = False
        self.backwards = 0
        self.others, self.other_params = {}, {}
        if (then := self.now()) is not None:
            then[self.o.START] = {self.o.GENERATORS: self.generators()}

    def restored(self, group: str, names: Iterable[str], states: Callable[[], Record]) -> None:
        """A generator was restored (or seeded): its state now, and the update it comes before."""
        if self.failed is None:
            current = states()
            found = [n for n in names if n in current]
            self.restores += [
                {"group": group, "generator": n, "digest": current[n], "before": self.update} for n in found
            ]

    def hold(self) -> None:
        """Hold the process right after update K until the verifier releases it (observation.PAUSE): the marker says
        so; the trainer's signal handlers run meanwhile, between two sleeps, as between two updates."""
        marker = Path(str(self.path).removesuffix(self.o.SUFFIX) + self.o.PAUSED)  # each rank's own
        release = Path(self.base + self.o.RELEASE)
        marker.write_text(str(self.update))
        deadline = time.monotonic() + self.o.HOLD_AT_MOST
        while not release.exists() and time.monotonic() < deadline:
            time.sleep(0.02)

    def halt(self) -> None:
        """End the process just before update K+1's optimizer step: its inputs are recorded (the restore is checked
        against them), and nothing the trainer does at the end of update K (its save) is cut short."""
        self.stopped = self.update - 1
        self.write(last=True)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)

    def exiting(self) -> None:
        """At exit, the last word of a process that trained (a launcher such as torchrun, which imports torch and
        steps nothing, writes no record: its workers do)."""
        if self.first is not None or self.blocked:
            self.write(last=True)

    def write(self, last: bool = False) -> None:
        """The record file, whole, atomically. `last`: a write the process may end after (its last recorded update,
        a stop, its exit) also names its source files, which takes a stat of every module it loaded."""
        document = {
            "format": self.o.FORMAT,
            "rank": self.rank,
            "updates": self.records,
            "restores": self.restores,
            "completed": self.update - 1 if not self.stepped else self.update,
            "stopped": self.stopped,
            "blocked": self.blocked,
            "iterators": sorted(self.iterators),
            self.o.FINGERPRINT: self.f.ALGORITHMS,
        }
        if last:
            outputs = Path(os.path.abspath(self.path)).parents[1]
            document[self.o.SOURCES] = _sources(self.sources, outputs)
            self.environment = self.environment or _environment(self.sources, outputs)
            document[self.o.ENVIRONMENT] = self.environment
        temporary = self.path.with_name(f".{self.path.name}.tmp-{os.getpid()}")
        temporary.write_text(json.dumps({**document, "failed": self.failed}, allow_nan=True))
        os.replace(temporary, self.path)  # the verifier reads a whole document or none


def _sources(known: dict[str, list[int] | None], outputs: Path) -> dict[str, list[int] | None]:
    """Every module file the process loaded, its script and each file its command line names (a dataset it opens is
    not seen), with [size, mtime_ns] (None: gone), stat'ed once: what --reuse-runs re-stats. The verification's own
    folder is its output, not code."""
    loaded = [getattr(m, "__file__", None) for m in list(sys.modules.values())]  # torch.ops's is a bare name
    named = [os.path.abspath(a) for a in sys.argv if os.path.isfile(a)]  # the script, a config the command names
    inside = os.path.join(outputs, "")  # absolute, as every path here: a prefix of strings (a Path each costs more)
    for path in {p for p in loaded if isinstance(p, str) and os.path.isabs(p)}.union(named) - known.keys():
        if not path.startswith(inside):
            try:
                known[path] = [(stat := os.stat(path)).st_size, stat.st_mtime_ns]
            except OSError:  # a module from a zip or a script that deleted itself: nothing to re-stat, never reused
                known[path] = None
    return known


def _environment(sources: dict[str, list[int] | None], outputs: Path) -> Record:
    """The interpreter, versions, script and code of the process (observation.ENVIRONMENT): the sha256 of each file
    it loaded from its script's folder, but the interpreter's own (a virtual environment inside a checkout), the
    observer's, and the verification's output."""
    script = os.path.abspath(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    folder = os.path.join(_root(script), "") if os.path.isfile(script) else "\0"  # no script: no code of its own
    theirs = {os.path.join(os.path.realpath(p), "") for p in (sys.prefix, sys.base_prefix)}
    ours = os.path.join(os.path.dirname(os.path.realpath(__file__)), "")  # the observer, injected into every process
    code = {}
    for path in sorted(sources):
        real = os.path.realpath(path)
        if path.startswith(folder) and not any(real.startswith(p) for p in (*theirs, ours, str(outputs))):
            try:
                with open(path, "rb") as file:
                    code[os.path.relpath(path, folder)] = hashlib.file_digest(file, "sha256").hexdigest()
            except OSError:
                continue  # gone since it was loaded: no code of the process to compare
    return {"executable": sys.executable, "python": platform.python_version(), "torch": str(torch.__version__),
            "script": sys.argv[0] if sys.argv else "", "code": code}  # fmt: skip


def _root(script: str) -> str:
    """The folder a script's code is read from: its own, or for `python -m pkg.module`, the one above its package
    (the checkout), so that the package's other modules are its code too."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    up = len(spec.name.split(".")) - 1 if spec is not None and spec.name else 0
    folder = os.path.dirname(script)
    for _ in range(up):
        folder = os.path.dirname(folder)
    return folder


# What every torch.nn.Module holds of its own (hooks, parameters, buffers, submodules, `training`): no trainer state.
_MODULE_INTERNALS = frozenset(vars(torch.nn.Module()))
_SKIP = object()  # an attribute that is no plain value: an object, a function, a large container
_PLAIN_TYPES = (bool, int, float, str, type(None))


def _attribute(value: Any, digest: Callable[[Any], str]) -> Any:
    """A module's attribute as the record holds it: a number, a flag, a short string, a small tuple of them, a
    tensor that is no buffer (its values up to 8, else its digest); a non-finite float as its name ("nan"), so that
    equal records read equal. Anything else is _SKIP."""
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if isinstance(value, _PLAIN_TYPES):
        return value if not isinstance(value, str) or len(value) <= 64 else _SKIP
    if isinstance(value, torch.Tensor):  # a dense tensor with values: a meta or sparse one is no state to compare
        if value.layout is not torch.strided or value.device.type == "meta":
            return _SKIP
        small = value.numel() <= 8
        return [_attribute(v, digest) for v in value.detach().reshape(-1).tolist()] if small else digest(value)
    if type(value).__module__ == "numpy" and hasattr(value, "item") and getattr(value, "ndim", 1) == 0:
        return _attribute(value.item(), digest)
    if isinstance(value, list | tuple) and len(value) <= 8 and all(isinstance(v, _PLAIN_TYPES) for v in value):
        return [_attribute(v, digest) for v in value]
    return _SKIP


def _schedule(state: Any) -> Any:
    """An LR scheduler's state without `_last_lr`, the lr it last computed: an output (the param groups hold what
    was applied), so that a schedule that computes another lr from the same state shows as such."""
    if isinstance(state, dict):
        return {key: _schedule(value) for key, value in state.items() if key != "_last_lr"}
    return [_schedule(value) for value in state] if isinstance(state, list) else state


def _params(optimizer: torch.optim.Optimizer) -> list[torch.Tensor]:
    return [p for group in optimizer.param_groups for p in group["params"]]


def _floats(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value.detach().to("cpu", torch.float64).reshape(-1)]
    if isinstance(value, bool | int | float):
        return [torch.tensor([float(value)], dtype=torch.float64)]
    if isinstance(value, dict):
        return [t for key in sorted(value, key=str) for t in _floats(value[key])]
    if isinstance(value, list | tuple):
        return [t for item in value for t in _floats(item)]
    return []


def _process_wide(generator: Any) -> bool:
    """The `random` module, NumPy's legacy global, torch's default generator or `torch.cuda`: recorded as global."""
    return (
        generator is random
        or generator is torch.default_generator
        or generator is torch.cuda
        or (generator is sys.modules.get("numpy.random"))
    )


def _plain(value: Any) -> Any:
    """A param group's hyper-parameter as JSON: numbers and strings as they are, tensors by value, else repr."""
    if isinstance(value, torch.Tensor):
        return value.tolist()
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value if isinstance(value, bool | int | float | str) or value is None else repr(value)


def _scaler(scaler: Any) -> Record:
    """A GradScaler's scale and growth tracker; a key this torch's state_dict lacks is None, and said (_unseen)."""
    state = scaler.state_dict()
    tracker = state.get("_growth_tracker")
    return {"scale": float(state.get("scale", 0.0)), "growth_tracker": None if tracker is None else int(tracker)}


def _unseen(scalers: Any) -> list[str]:
    """What of the state the observer reads through private keys this torch does not have: a silent 0 would call a
    lost growth tracker restored."""
    return ["scaler.growth_tracker"] if any("_growth_tracker" not in s.state_dict() for s in scalers) else []
