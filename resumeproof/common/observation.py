"""What the observer records inside a trainer's process, as both sides name it: the environment that asks for it,
the record file, its keys, and its reading (protocol revisions 1.3 and 1.4, docs/protocol.md, "The observer's records").

The verifier starts every trajectory with `OBSERVE_ENV` naming the record file (without suffix; each rank of a
torchrun group adds its own) and `UPDATES_ENV` the updates of the process to record, counted from 1 in that
process. The observer (resumeproof/observe/) writes one JSON document, atomically, after each recorded update:

    {"format": "resumeproof-observation/1", "rank": 0, "updates": {"6": UPDATE, ...}, "restores": [...],
     "completed": 10, "stopped": null, "blocked": [], "failed": null,
     "fingerprint": {"cpu": "xxh3-128", "device": "pk128/1"}}

An UPDATE holds, in the order the update consumes them, digests (32 hex digits: a sha256 over a structure's keys,
dtypes, shapes and its tensors' fingerprints, each computed where the tensor lives with the algorithms FINGERPRINT
names, observe/fingerprint.py) and a few numbers, by moment (START ... AFTER): `Recorded` below, as the verifier
reads them. `restores` lists every generator restore (`torch.set_rng_state`, `numpy.random.set_state`,
`random.setstate`, the kit's `Generators.restore`, ...) with the state's digest and the update it came before.
`iterators` lists the updates in progress when the process made a new DataLoader iterator (where an epoch, or an
evaluation loop, starts); `completed` counts the updates the process finished; `stopped` is K where STOP_ENV asked
the observer to end the process after update K (the record of update K+1 then holds its inputs up to the step it
never took); `blocked` lists the restores BLOCK_ENV turned into no-ops that the trainer called; `sources` maps each
file of the process's code to [size, mtime_ns] (verify/run/reuse.py). The document is written again at exit.

This module is loaded by its path inside trainers that may not have this package installed (the observer's
`sitecustomize`): it imports the standard library only.
"""

import json
import os
from array import array
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Self

FORMAT = "resumeproof-observation/1"
OBSERVE_ENV = "RESUMEPROOF_OBSERVE"  # the record file, without its suffix
UPDATES_ENV = "RESUMEPROOF_OBSERVE_UPDATES"  # "1,6,10" or "1-12": the process's updates to record
STOP_ENV = "RESUMEPROOF_OBSERVE_STOP"  # "exit:K" or "sigterm:K": end the process after its update K
BLOCK_ENV = "RESUMEPROOF_OBSERVE_BLOCK"  # "rng" or a fault's part: the restores the observer turns into no-ops
VALUES_ENV = "RESUMEPROOF_OBSERVE_VALUES"  # "1": also write the values VALUED names (a comparison within --atol)
SITE = Path(__file__).resolve().parents[1] / "observe" / "site"  # the directory whose sitecustomize injects it
SUFFIX = ".json"

# The moments of an update, in the order the update consumes what they record.
START, FORWARD, LOSS, STEP, AFTER = "start", "forward", "loss", "step", "after"
MOMENTS = (START, FORWARD, LOSS, STEP, AFTER)
# What a moment holds.
GENERATORS, BATCH, MODEL, GRADS = "generators", "batch", "model", "grads"
OPTIMIZER, GROUPS, SCHEDULERS, SCALERS, PARAMS = "optimizer", "groups", "schedulers", "scalers", "params"
AVERAGED = "averaged"  # every torch.optim.swa_utils.AveragedModel (an EMA, SWA), at the step: no forward pass uses it
ATTRIBUTES = "attributes"  # at the forward pass: the plain attributes of the root's modules of the trainer's classes
TARGET = "target"  # at the loss: the target of the update's first loss function (torch.nn.functional's, a loss module)
# At the step: every other module the update called (a teacher, an EMA kept by hand), by name: its parameters' and
# buffers' digests (STATE) and whether the stepping optimizer holds its parameters (OPTIMIZED).
MODULES, STATE, OPTIMIZED = "modules", "state", "optimized"
BACKWARDS = "backwards"  # at the step: the backward passes since the previous update (gradient accumulation)
UNSEEN = "unseen"  # at the step: the state the observer could not read ("scaler.growth_tracker"), each once
VALUE, DIGEST, SCALE = "value", "digest", "scale"
GLOBAL, KIT = "global", "kit"  # generators: the process-wide ones by their own names, a trainer's own by its names
# How the observer ends an interrupted run (`--stop`): just before update K+1's optimizer step, after whatever the
# trainer does at the end of update K (its save); or with SIGTERM right after update K, as a preemption does.
EXIT, SIGTERM = "exit", "sigterm"
STOPS = (EXIT, SIGTERM)
# A job Slurm preempts (--preempt): its first start is held right after update K, the record written and a marker
# beside it (PAUSED), until the verifier, having had Slurm preempt the job, writes RELEASE (or HOLD_AT_MOST passes).
# The trainer's own handler runs meanwhile, as a preemption's signal lands between two updates. A restart
# (SLURM_RESTART_COUNT set) is never held, and records into a file of its own (`restarted`).
PAUSE = "pause"
PAUSED, RELEASE = ".paused", ".release"
HOLD_AT_MOST = 600.0  # seconds: a verifier that is gone never leaves a trainer held for good
RESTART_ENV = "SLURM_RESTART_COUNT"  # Slurm's count of a job's restarts (unset on its first start)
# What the observer can block (BLOCK_ENV): the generators' setters (the negative control), or one part's
# `load_state_dict` (a fault), each made a no-op that answers its caller as the real one would.
RNG_SETTERS = "rng"
BLOCKABLE = ("model", "optimizer", "scheduler", "scaler")  # the protocol's part names (common/protocol.py)
# What VALUES_ENV keeps by value besides its digest: the optimizer's state entering the step (every tensor and
# number of each parameter's state, in the optimizer's order, keys sorted) and the parameters after it (the root
# module's, in its order); float64, native byte order, flat, one file per update and field beside the record.
VALUED = ((STEP, OPTIMIZER), (AFTER, PARAMS))
# The fingerprints a record's digests were made with, by where the tensor lived: {"cpu": "xxh3-128" or "sha256",
# "device": "pk128/1"}. Digests compare only between records made with the same ones.
FINGERPRINT, SOURCES = "fingerprint", "sources"
# The process's environment (ENVIRONMENT), written with SOURCES: the interpreter, Python's and torch's versions, the
# script (argv[0]) and the sha256 of each file of its code (the modules it loaded from its script's folder, by their
# path from there, not the interpreter's own nor the observer's): what a resume by another checkout or another torch
# changes (verify/judge/records/versions.py).
ENVIRONMENT = "environment"


def record_file(base: str | Path, rank: int | None) -> Path:
    """The record file of one process: `BASE.json`, or `BASE.rank-R.json` under a launcher."""
    return Path(f"{base}{'' if rank is None else f'.rank-{rank}'}{SUFFIX}")


def restarted(base: str, environ: dict[str, str] | Any) -> str:
    """The record base of a process: `base`, or `BASE.restart-N` for a job Slurm restarted (N: its restart count),
    so that each start of a preempted job keeps its own records."""
    count = environ.get(RESTART_ENV, "")
    return f"{base}.restart-{count}" if count.isdigit() and int(count) > 0 else base


def values_file(record: Path, update: int, moment: str, key: str) -> Path:
    """Where the process writing `record` keeps one update's values of (moment, key) under VALUES_ENV."""
    return record.with_name(record.name.removesuffix(SUFFIX) + ".values") / f"{update}.{moment}.{key}.f64"


def updates_wanted(text: str | None) -> frozenset[int]:
    """The updates `UPDATES_ENV` names ("1,6,10", "1-12" or both); none when it is absent or unreadable (the
    observer then records nothing)."""
    wanted: set[int] = set()
    try:
        for part in (text or "").split(","):
            first, _, last = part.strip().partition("-")
            if first:
                wanted |= set(range(int(first), int(last or first) + 1))
    except ValueError:
        return frozenset()
    return frozenset(wanted)


def stop_asked(text: str | None) -> tuple[str, int] | None:
    """`STOP_ENV` read: (how, K), or None when absent or unreadable (the observer then stops nothing). `exit:0` ends
    a resumed process right before its first update's step: what its checkpoint feeds that update, and nothing
    more (verify/plan/trainer.py's inputs of a restore)."""
    how, _, k = (text or "").partition(":")
    return (how, int(k)) if how in (*STOPS, PAUSE) and k.isdigit() and int(k) >= (0 if how == EXIT else 1) else None


def blocks_asked(text: str | None) -> frozenset[str]:
    """`BLOCK_ENV` read: what to block, among RNG_SETTERS and BLOCKABLE (anything else is ignored)."""
    return frozenset(part.strip() for part in (text or "").split(",") if part.strip() in (RNG_SETTERS, *BLOCKABLE))


def site_first(base: Any) -> str:
    """`base`'s PYTHONPATH with the observer's sitecustomize first: what injects it into a process (and `resumeproof
    watch`'s, common/watching.py)."""
    return os.pathsep.join([str(SITE), *([base["PYTHONPATH"]] if base.get("PYTHONPATH") else [])])


def environment(
    base: dict[str, str],
    record: Path,
    updates: set[int] | frozenset[int] | str,
    stop: tuple[str, int] | None = None,
    block: tuple[str, ...] = (),
    values: bool = False,
) -> dict[str, str]:
    """`base` with the observer injected: its sitecustomize first on PYTHONPATH, where to write, what to record
    (a set of updates, or UPDATES_ENV's text), and where asked, when to stop the process, what to block and whether
    to keep values."""
    wanted = updates if isinstance(updates, str) else ",".join(str(n) for n in sorted(updates))
    env = {**base, "PYTHONPATH": site_first(base), OBSERVE_ENV: str(record), UPDATES_ENV: wanted}
    for inherited in (STOP_ENV, BLOCK_ENV, VALUES_ENV):  # never from the verifier's own environment
        env.pop(inherited, None)
    if values:
        env[VALUES_ENV] = "1"
    if stop is not None:
        env[STOP_ENV] = f"{stop[0]}:{stop[1]}"
    if block:
        env[BLOCK_ENV] = ",".join(block)
    return env


# What the records hold, read once (`Recorded.of`): each moment's keys as its fields, None where not recorded.
Generators = dict[str, dict[str, str]]  # GLOBAL or KIT -> a generator's name -> its state's digest
Digests = dict[str, str]  # a name (a parameter, a buffer, "PARAM_INDEX.KEY" such as "0.exp_avg") -> its digest
ByClass = list[dict[str, str]]  # one {class name: digest} per LR scheduler or averaged model, in the trainer's order


@dataclass(frozen=True, kw_only=True)
class Moment:
    """What one moment of an update holds; `of` keeps the keys it names and drops any other (a later observer's)."""

    @classmethod
    def of(cls, held: Any) -> Self:
        names = {f.name for f in fields(cls)}
        return cls(**{key: value for key, value in held.items() if key in names}) if isinstance(held, dict) else cls()


@dataclass(frozen=True, kw_only=True)
class Start(Moment):  # right after the previous update (the process's first update has none)
    generators: Generators | None = None


@dataclass(frozen=True, kw_only=True)
class Forward(Moment):  # at the first forward pass that trains
    generators: Generators | None = None
    batch: str | None = None  # what enters the root module
    model: Digests | None = None  # its parameters and buffers
    attributes: dict[str, Any] | None = None  # "ROOT.PATH.NAME" -> a plain value, or a large tensor's digest


@dataclass(frozen=True, kw_only=True)
class Loss(Moment):  # the loss handed to backward, unscaled where a GradScaler scaled it
    digest: str | None = None
    value: float | None = None
    scale: float | None = None  # the GradScaler's
    target: str | None = None  # what the update's first loss function held the output to


@dataclass(frozen=True, kw_only=True)
class Step(Moment):  # right before the optimizer's step
    optimizer: Digests | None = None  # its per-parameter state, one digest per tensor
    groups: list[dict[str, Any]] | None = None  # each param group's hyper-parameters
    schedulers: ByClass | None = None
    scalers: list[dict[str, Any]] | None = None  # each enabled GradScaler's scale and growth tracker
    averaged: ByClass | None = None
    backwards: int | None = None
    unseen: list[str] | None = None
    modules: dict[str, dict[str, Any]] | None = None  # name -> {STATE: Digests, OPTIMIZED: bool}


@dataclass(frozen=True, kw_only=True)
class After(Moment):  # right after the step
    generators: Generators | None = None
    grads: str | None = None  # the gradients the step used
    params: Digests | None = None


@dataclass(frozen=True, kw_only=True)
class Recorded:
    """One update as the observer recorded it, its moments as fields; a moment it did not reach (an interrupted
    process's last update ends before its step) holds nothing."""

    start: Start = Start()
    forward: Forward = Forward()
    loss: Loss = Loss()
    step: Step = Step()
    after: After = After()

    @classmethod
    def of(cls, update: dict[str, Any]) -> "Recorded":
        return cls(
            start=Start.of(update.get(START)),
            forward=Forward.of(update.get(FORWARD)),
            loss=Loss.of(update.get(LOSS)),
            step=Step.of(update.get(STEP)),
            after=After.of(update.get(AFTER)),
        )

    def held(self, moment: str, key: str) -> Any:
        """What one (moment, key) holds, as the judge's tables name it (VALUED, the compared fields)."""
        return getattr(getattr(self, moment), key)

    @property
    def generators(self) -> list[Generators]:
        """The generators' states at each moment that holds them, in the update's order."""
        found = (self.start.generators, self.forward.generators, self.after.generators)
        return [states for states in found if states is not None]


@dataclass(frozen=True)
class Restore:
    """A generator's restore: its state's digest, and the update of the process it came before."""

    group: str  # GLOBAL or KIT
    generator: str
    digest: str
    before: int

    @classmethod
    def of(cls, held: Any) -> "Restore | None":
        """One entry of `restores`, or None where it is not one."""
        match [held.get(key) for key in ("group", "generator", "digest", "before")] if isinstance(held, dict) else []:
            case [str(group), str(generator), str(digest), int(before)]:
                return cls(group=group, generator=generator, digest=digest, before=before)
        return None


@dataclass(frozen=True)
class Environment:
    """What ran a process: its interpreter, versions, script and code (ENVIRONMENT)."""

    executable: str
    python: str
    torch: str
    script: str  # the script's path, as argv[0] named it
    code: dict[str, str]  # sha256 of each file of its code, by its path from the script's folder

    @classmethod
    def of(cls, held: Any) -> "Environment | None":
        if not isinstance(held, dict):
            return None
        match [held.get(key) for key in ("executable", "python", "torch", "script", "code")]:
            case [str(executable), str(python), str(torch), str(script), dict(code)]:
                files = {str(path): str(digest) for path, digest in code.items()}
                return cls(executable=executable, python=python, torch=torch, script=script, code=files)
        return None


@dataclass(frozen=True)
class Observation:
    """One process's records, as read back by the verifier."""

    rank: int | None
    updates: dict[int, Recorded]  # the updates of the process it recorded
    restores: list[Restore] = field(default_factory=list)
    failed: str | None = None  # why the observer stopped recording, if it did
    completed: int | None = None  # the updates the process finished, when it wrote that down
    stopped: int | None = None  # the update after which the observer ended the process (STOP_ENV), if it did
    blocked: tuple[str, ...] = ()  # what the process tried to restore that the observer blocked (BLOCK_ENV)
    source: Path | None = None  # the record file it was read from
    iterators: tuple[int, ...] = ()  # the updates in progress when a new DataLoader iterator was made
    fingerprint: dict[str, str] | None = None  # FINGERPRINT: the algorithms its digests were made with
    environment: Environment | None = None  # ENVIRONMENT: what ran it, where it wrote that (at its last write)

    def at(self, update: int) -> Recorded | None:
        return self.updates.get(update)

    def values(self, update: int, moment: str, key: str) -> array | None:
        """The values VALUES_ENV kept of one update's (moment, key), or None where there are none."""
        if self.source is None:
            return None
        try:
            data = values_file(self.source, update, moment, key).read_bytes()
        except OSError:
            return None
        if len(data) % 8:
            return None
        kept = array("d")
        kept.frombytes(data)
        return kept


def read_all(base: Path) -> dict[int | None, Observation]:
    """Every record one trajectory's processes wrote: one without a launcher, one per rank under torchrun."""
    found: dict[int | None, Observation | None] = {None: read(record_file(base, None))}
    for path in base.parent.glob(f"{base.name}.rank-*{SUFFIX}"):
        found[int(path.name.removesuffix(SUFFIX).rpartition("-")[2])] = read(path)
    return {rank: seen for rank, seen in found.items() if seen is not None}


def read(path: Path) -> Observation | None:
    """The records of `path`, or None where there are none or they are not the observer's (never an error: the
    records are evidence, and a trainer the observer could not watch is judged without them)."""
    try:
        document = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        return None
    updates = document.get("updates")
    if not isinstance(updates, dict):
        return None
    try:
        numbered = {int(n): Recorded.of(moments) for n, moments in updates.items() if isinstance(moments, dict)}
    except ValueError:
        return None
    keys = ("restores", "rank", "completed", "stopped", "blocked", "iterators", FINGERPRINT)
    restores, rank, completed, stopped, blocked, iterators, fingerprint = (document.get(key) for key in keys)
    return Observation(
        rank=rank if isinstance(rank, int) else None,
        updates=numbered,
        restores=[r for r in map(Restore.of, restores) if r is not None] if isinstance(restores, list) else [],
        failed=document.get("failed") if isinstance(document.get("failed"), str) else None,
        completed=completed if isinstance(completed, int) else None,
        stopped=stopped if isinstance(stopped, int) else None,
        blocked=tuple(b for b in blocked if isinstance(b, str)) if isinstance(blocked, list) else (),
        source=path,
        iterators=tuple(n for n in iterators if isinstance(n, int)) if isinstance(iterators, list) else (),
        fingerprint={str(k): str(v) for k, v in fingerprint.items()} if isinstance(fingerprint, dict) else None,
        environment=Environment.of(document.get(ENVIRONMENT)),
    )


def incomparable(records: Iterable[Observation]) -> str | None:
    """Why the records cannot be compared, in one line; None where every record's digests were made with the same
    fingerprints: equal digests say equal bytes, and different ones a real difference, only between the same
    algorithms (a record without FINGERPRINT comes from an observer before it, whose digests were other sha256s)."""
    seen: dict[str, list[str]] = {}
    for record in records:
        used = record.fingerprint or {}
        said = ", ".join(f"{where} {used[where]}" for where in sorted(used)) or "unrecorded fingerprints"
        seen.setdefault(said, []).append(record.source.name if record.source is not None else "?")
    if len(seen) < 2:
        return None
    made = "; ".join(f"{said} ({', '.join(sources)})" for said, sources in seen.items())
    return f"the observer's records were made with different fingerprints, whose digests cannot be compared: {made}"
