"""`resumeproof watch` inside the run: a record beside every file the run saves, and each restart's restore checked.

Installed with the observer (observe/install.py) where WATCH_ENV names a watch folder (common/watching.py). The
observer records the process's first update alone; this module
- wraps `torch.save`: once a file (or an in-memory buffer a framework writes out whole) is saved, its fingerprint
  names a record of the state a restore must bring back, as the process holds it at that moment: the model's
  parameters and buffers, its modules' plain attributes, the optimizer's state and hyper-parameters, the
  schedulers, GradScalers and averaged models, and each generator the run set or drew from;
- wraps `torch.load`: a loaded file whose fingerprint has a record is what this start resumes from; and the same
  for DCP's save and load and safetensors' writer and reader, once the trainer imports them;
- once the first update has consumed its inputs and before its step changes anything (observer.py calls `ready`),
  compares the record with the state now (common/watching.compare), appends one line to resumes.jsonl and prints
  it; under `--on-mismatch stop` a restart that differs ends there, before any compute is spent on it.

Like the observer, it never raises into the trainer: a failure is said on stderr and the run goes on unwatched.
"""

from __future__ import annotations

import atexit
import datetime
import hashlib
import importlib.abc
import importlib.util
import io
import json
import os
import socket
import sys
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import torch

if TYPE_CHECKING:
    from resumeproof.observe.observer import Observer

CHUNK = 1 << 23  # bytes read at once while a file is fingerprinted
DCP = "torch.distributed.checkpoint"  # patched once the trainer imports it: an import costs a watched process 0.6 s
DCP_METADATA = ".metadata"
SAFETENSORS = "safetensors"  # patched once imported: its writer and reader, before its own modules bind them
NO_RECORD = "no record of this file: saved before the run was watched, or its process ended before the record"
try:  # the observer's own optional import: xxh3 where it imports, else sha256
    import xxhash

    FILE_DIGEST = "xxh3-128"
except ImportError:
    xxhash = None  # type: ignore[assignment]
    FILE_DIGEST = "sha256"


class Watch:
    def __init__(self, o: Observer, names: ModuleType, run: str, on_mismatch: str, rank: int | None) -> None:
        self.o, self.w, self.run, self.stop, self.rank = o, names, Path(run), on_mismatch == names.STOP, rank
        self.loaded: list[tuple[str, str, Path]] = []  # (as loaded, its digest, its save record) before update 1
        self.unrecorded: list[tuple[str, str]] = []  # (as loaded, its digest): files loaded that no record names
        self.checked = False
        self.base = 0  # the updates the run had made before this start: those of the checkpoint it resumed from
        self.cached: tuple[int, dict[str, Any]] | None = None  # the state at one update: several files, one state
        self.set_to: list[dict[str, str]] = []  # every generator's state after each restore or seed before update 1
        self.initial = o.generators()  # what "drawn from" is told against: the states before the trainer ran
        self.off: str | None = None  # why it stopped watching, once something failed
        self.awaiting: list[tuple[int, Path, dict[str, Any]]] = []  # (updates done, record, its content) of the saves
        # made since the last update began: each learns the batch the next update is fed

    def safely(self, hook: Any, *args: Any) -> None:
        """`hook(*args)`, unable to raise into the trainer: the first failure is said once and ends the watch."""
        if self.off is not None:
            return
        try:
            hook(*args)
        except Exception as err:  # inside someone else's process: say why, never raise
            self.off = f"{type(err).__name__}: {err}"
            print(f"resumeproof watch: not watching this process any more ({self.off})", file=sys.stderr, flush=True)

    # -- a save --------------------------------------------------------------------------------------------------

    def saved(self, destination: Any) -> None:
        """After `torch.save(obj, destination)`: the record of what was saved, by the file's fingerprint."""
        digest = _digest_of(destination, written=True)
        if digest is None:
            return
        record = {
            "format": self.w.FORMAT,
            "file": _name(destination),
            "digest": digest,
            "update": self.base + self._done(),  # the run's count
            "time": _now(),
            "process": _process(self.rank),
            "fingerprint": {**self.o.f.ALGORITHMS, "file": FILE_DIGEST},
            "state": self.state(),
        }
        path = self.w.save_record(self.run, digest, self.rank)
        self.w.write_atomically(path, json.dumps(record, allow_nan=True))
        self.awaiting.append((self._done(), path, record))

    def fed(self, batch: str) -> None:
        """The first forward pass of an update that trains was fed `batch`: where it is the update right after a
        save, the save's record gains it, so that a restart's first update can be held to it. A save made inside an
        update (after its forward pass) waits for no batch: the update it resumes into was fed before the save."""
        for done, path, record in self.awaiting:
            if self.o.update == done + 1:
                record["state"] = {**record["state"], self.w.NEXT_BATCH: batch}
                self.w.write_atomically(path, json.dumps(record, allow_nan=True))
        self.awaiting = []

    def _done(self) -> int:
        """The updates this process has made, the one in progress once its step ran."""
        return self.o.update - 1 if not self.o.stepped else self.o.update

    def state(self) -> dict[str, Any]:
        """What a restore must bring back, as the process holds it now; computed once per update."""
        done = self._done()
        if self.cached is not None and self.cached[0] == done:
            return self.cached[1]
        w, o = self.w, self.o
        root = o.root() if o.root is not None else None
        optimizer = o.first() if o.first is not None else None
        found: dict[str, Any] = {w.GENERATORS: self.drawn()}
        if root is not None:
            found |= {w.MODEL: o.model(), w.ATTRIBUTES: o.attributes(root)}
        if optimizer is not None:
            held = o.optimizer_state(optimizer)
            found |= {key: held[key] for key in (w.OPTIMIZER, w.GROUPS, w.SCHEDULERS, w.SCALERS, w.AVERAGED)}
        self.cached = (done, found)
        return found

    def drawn(self) -> dict[str, dict[str, str]]:
        """The generators that are the run's state: each one it set (seeded, restored) or drew from since it began.
        One nobody touched (an unseeded `random` a torch loop never draws from) is no state of the run."""
        set_ = {(r["group"], r["generator"]) for r in self.o.restores}
        found: dict[str, dict[str, str]] = {}
        for group, states in self.o.generators().items():
            before = self.initial.get(group, {})
            kept = {n: d for n, d in states.items() if (group, n) in set_ or (n in before and before[n] != d)}
            if kept:
                found[group] = kept
        return found

    # -- a restart -----------------------------------------------------------------------------------------------

    def restored(self) -> None:
        """After a generator restore or seed before the first update: every generator's state, by the names a save
        records them under. A restore through one object (the kit's `Generators`) sets a process-wide generator that
        a save records among the global ones."""
        if self.o.update == 1 and not self.o.stepped:
            found = self.o.generators().items()
            self.set_to += [{"group": g, "generator": n, "digest": d} for g, states in found for n, d in states.items()]

    def loading(self, source: Any) -> None:
        """Before `torch.load(source)` in a process that has not stepped yet: a file the run saved is resumed from."""
        if self.o.update > 1 or self.o.stepped:
            return
        digest = _digest_of(source, written=False)
        if digest is None:
            return
        record = self.w.find_record(self.run, digest, self.rank)
        if record is not None:
            self.loaded.append((_name(source), digest, record))
        else:
            self.unrecorded.append((_name(source), digest))

    def ready(self, now: dict[str, Any]) -> None:
        """The first update's record (the observer's) holds its inputs, before its step: judge the restore once."""
        if not self.checked and (self.loaded or self.unrecorded):
            self.safely(self.check, now)

    def check(self, now: dict[str, Any]) -> None:
        forward, step = now.get(self.o.o.FORWARD) or {}, now.get(self.o.o.STEP) or {}
        if self.w.MODEL not in forward or self.w.OPTIMIZER not in step:  # a closure: its forward pass is to come
            return
        self.checked = True
        fed = {self.w.NEXT_BATCH: forward.get(self.o.o.BATCH)}
        restart = self.judged({**forward, **step, **fed}) if self.loaded else self.unrecorded_restart(NO_RECORD)
        if restart is None:
            return
        self.base = restart.saved_update or 0
        self.say(restart)
        if restart.stopped:
            sys.stdout.flush()
            os._exit(self.w.STOP_EXIT)  # before the step: nothing is trained, nothing saved over a good checkpoint

    def ended(self) -> None:
        """At exit, a restart that made no update (its run already at its end, or stopped before one): said, not
        judged, so that every start that loaded a checkpoint has its line."""
        if self.checked or not (self.loaded or self.unrecorded):
            return
        self.checked = True
        said = "it ended before its first update: nothing to hold against the record"
        if self.loaded:
            restart = self.unjudged(*self.loaded[-1][:2], said)
        else:
            restart = self.unrecorded_restart(f"{NO_RECORD}; {said}")
        if restart is not None:
            self.say(restart)

    def say(self, restart: Any) -> None:
        self.w.append_line(self.run / self.w.RESUMES, restart.to_json())
        print(restart.line(), file=sys.stderr, flush=True)

    def unrecorded_restart(self, note: str) -> Any:
        """A start that loaded files none of which the run recorded: in a run that has saved under the watch, a
        checkpoint whose record is missing (its process ended between the save and the record); never judged, never
        passed over. Elsewhere, the first start of a run (a pretrained file): nothing to say."""
        if not any((self.run / self.w.SAVES).glob("*.json")):
            return None
        return self.unjudged(*self.unrecorded[-1], note)

    def unjudged(self, name: str, digest: str, note: str) -> Any:
        """A restart's line with nothing judged, and why."""
        process = _process(self.rank)
        return self.w.Restart(
            time=_now(), status=self.w.UNJUDGED, checkpoint=name, digest=digest, process=process, note=note
        )

    def judged(self, now: dict[str, Any]) -> Any:
        """The restart, judged against the record of the last file it loaded that the run saved."""
        w = self.w
        name, digest, path = self.loaded[-1]
        also = [n for n, _, _ in self.loaded[:-1]]
        note = f"also loaded {', '.join(also)}" if also else None
        base: dict[str, Any] = {"time": _now(), "checkpoint": name, "digest": digest, "process": _process(self.rank)}
        base["note"] = note
        try:
            record = json.loads(path.read_text())
            saved = record["state"]
            base |= {"saved_update": record.get("update"), "saved_at": record.get("time")}
            if not os.path.isabs(name):  # loaded from memory (the kit reads and checks the bytes first): the saved name
                base["checkpoint"] = record.get("file") or name
            base["saved_by"] = record.get("process") or {}
        except (OSError, ValueError, KeyError, TypeError) as err:  # a record is evidence: unreadable, nothing judged
            return w.Restart(status=w.UNJUDGED, **{**base, "note": f"its record {path.name} is unreadable ({err})"})
        if record.get("fingerprint", {}).get("cpu") != self.o.f.ALGORITHMS["cpu"]:
            return w.Restart(status=w.UNJUDGED, **{**base, "note": "its record was made with other fingerprints"})
        saver = base["saved_by"].get("rank")
        if saver != self.rank and w.GENERATORS in saved:  # another rank's generators and batch are not this one's
            saved = {key: held for key, held in saved.items() if key not in (w.GENERATORS, w.NEXT_BATCH)}
            base["note"] = _also(base["note"], f"its generators and batch not judged: rank {saver} saved alone")
        elif w.NEXT_BATCH not in saved:
            base["note"] = _also(base["note"], w.UNFED)
        found = w.compare(saved, now, self.set_to)  # the generators as the first forward pass found them
        differences = [{"part": d.part, "how": d.how} for d in found]
        status = w.DIFFERS if found else w.EXACT
        return w.Restart(status=status, differences=differences, stopped=bool(found) and self.stop, **base)


def _also(note: str | None, said: str) -> str:
    return f"{note}; {said}" if note else said


def _dcp_folder(kwargs: dict[str, Any]) -> Path | None:
    """The folder of a DCP save or load: its `checkpoint_id`, or its file system writer's or reader's `path`; None
    for another store (no file to fingerprint)."""
    given = kwargs.get("checkpoint_id")
    if given is None:
        given = getattr(kwargs.get("storage_writer") or kwargs.get("storage_reader"), "path", None)
    return Path(given) if isinstance(given, str | os.PathLike) else None


def _digest_of(target: Any, written: bool) -> str | None:
    """The fingerprint of a file given by its path, an open file (read from its start, its position kept) or an
    in-memory buffer; None where there is nothing to read back (a pipe, a socket)."""
    if isinstance(target, str | os.PathLike):
        if Path(target).is_dir():  # a DCP checkpoint: its `.metadata`, written last by the coordinator, names it
            metadata = Path(target) / DCP_METADATA
            return _hash_file(metadata) if metadata.is_file() else None
        return _hash_file(Path(target)) if Path(target).is_file() else None
    if isinstance(target, io.BytesIO):
        return _hash_bytes(target.getbuffer())
    if written and hasattr(target, "flush") and isinstance(getattr(target, "name", None), str):
        target.flush()  # the bytes torch.save wrote, on their way to the file it names
        return _hash_file(Path(target.name)) if Path(target.name).is_file() else None
    if hasattr(target, "seekable") and target.seekable():
        at = target.tell()
        try:
            target.seek(0)
            return _hash_stream(target)
        finally:
            target.seek(at)
    return None


def _hasher() -> Any:
    return xxhash.xxh3_128() if xxhash is not None else hashlib.sha256()


def _hash_file(path: Path) -> str:
    with path.open("rb") as f:
        return _hash_stream(f)


def _hash_stream(f: Any) -> str:
    h = _hasher()
    while chunk := f.read(CHUNK):
        h.update(chunk)
    return str(h.hexdigest())


def _hash_bytes(data: Any) -> str:
    h = _hasher()
    h.update(data)
    return str(h.hexdigest())


def _name(target: Any) -> str:
    if isinstance(target, str | os.PathLike):
        return os.path.abspath(target)
    return str(getattr(target, "name", None) or type(target).__name__)


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def _process(rank: int | None) -> dict[str, Any]:
    """Which process this is: enough to tell a restart's job, requeue and elastic restart apart."""
    env = os.environ
    return {
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "rank": rank,
        "job": env.get("SLURM_JOB_ID"),
        "restart": env.get("SLURM_RESTART_COUNT"),
        "elastic_restart": env.get("TORCHELASTIC_RESTART_COUNT"),
    }


def install(o: Observer, names: ModuleType, environ: dict[str, str] | Any) -> Watch:
    """Watch this process's saves and loads: `names` is common/watching.py, as sitecustomize loaded it."""
    on_mismatch = environ.get(names.ON_MISMATCH_ENV) or names.WARN
    watch = Watch(o, names, environ[names.WATCH_ENV], on_mismatch, o.rank)
    save, load = torch.save, torch.load

    def saving(obj: Any, f: Any, *args: Any, **kwargs: Any) -> Any:
        result = save(obj, f, *args, **kwargs)
        watch.safely(watch.saved, f)
        return result

    def loading(f: Any, *args: Any, **kwargs: Any) -> Any:
        watch.safely(watch.loading, f)
        return load(f, *args, **kwargs)

    torch.save = torch.serialization.save = saving
    torch.load = torch.serialization.load = loading
    observed = o.restored

    def restored(group: str, names_: Any, states: Any) -> None:  # the observer's, then the watch's snapshot
        observed(group, names_, states)
        watch.safely(watch.restored)

    o.restored = restored  # type: ignore[method-assign,assignment]
    o.watch = watch
    atexit.register(watch.safely, watch.ended)
    for name, patch in ((DCP, _watch_dcp), (SAFETENSORS, _watch_safetensors)):
        if name in sys.modules:
            patch(sys.modules[name], watch)
        else:
            sys.meta_path.insert(0, _WhenImported(name, lambda module, patch=patch: patch(module, watch)))
    return watch


def _watch_dcp(dcp: ModuleType, watch: Watch) -> None:
    """DCP's save and load, as torch.save's and torch.load's: a checkpoint folder is named by its `.metadata`."""
    save, load = getattr(dcp, "save"), getattr(dcp, "load")  # noqa: B009  (a module's attribute, patched)

    def saving(state_dict: Any, *args: Any, **kwargs: Any) -> Any:
        result = save(state_dict, *args, **kwargs)
        folder = _dcp_folder(kwargs)
        if folder is not None:
            watch.safely(watch.saved, folder)
        return result

    def loading(state_dict: Any, *args: Any, **kwargs: Any) -> Any:
        folder = _dcp_folder(kwargs)
        if folder is not None:
            watch.safely(watch.loading, folder)
        return load(state_dict, *args, **kwargs)

    setattr(dcp, "save", saving)  # noqa: B010
    setattr(dcp, "load", loading)  # noqa: B010


def _watch_safetensors(safetensors: ModuleType, watch: Watch) -> None:
    """safetensors' file writer and reader, patched in the package before anything binds them (its own `torch`
    module, the transformers Trainer): `serialize_file` under `save_file` and `save_model`, `safe_open` under
    `load_file`, `load_model` and a framework's own sharded reads."""
    write, open_ = getattr(safetensors, "serialize_file"), getattr(safetensors, "safe_open")  # noqa: B009

    def serialize_file(tensors: Any, filename: Any, *args: Any, **kwargs: Any) -> Any:
        result = write(tensors, filename, *args, **kwargs)
        watch.safely(watch.saved, filename)
        return result

    def safe_open(filename: Any, *args: Any, **kwargs: Any) -> Any:
        watch.safely(watch.loading, filename)
        return open_(filename, *args, **kwargs)

    setattr(safetensors, "serialize_file", serialize_file)  # noqa: B010
    setattr(safetensors, "safe_open", safe_open)  # noqa: B010


class _WhenImported(importlib.abc.MetaPathFinder):
    """Calls `then(module)` once `name` is imported (its real finder and loader do the import), and leaves."""

    def __init__(self, name: str, then: Any) -> None:
        self.name, self.then = name, then

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name != self.name:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        execute, then = spec.loader.exec_module, self.then

        def exec_module(module: ModuleType) -> None:
            execute(module)
            then(module)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec
