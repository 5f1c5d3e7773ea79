"""Reference trainer: a small, fully specified float64 CPU training that checkpoints every state.

    python -B train.py --steps 10 --output runs/continuous
    python -B train.py --steps 5 --output runs/interrupted
    python -B train.py --steps 5 --output runs/resumed --resume runs/interrupted/checkpoint.pt

It follows resume-protocol/1 (docs/protocol.md): `--steps` counts the updates this process runs,
`--output` must not exist, and the directory receives checkpoint.pt, checkpoint.pt.sha256 and
summary.json. Network 2 -> 8 -> 1 with dropout (33 parameters), Adam, StepLR; randomness from
Python's random (input gain), NumPy PCG64 (input noise, epoch permutations) and torch (dropout).
"""

import os

# Before torch loads, so that its thread pools are created with one thread whatever the
# environment says (torch.set_num_threads(1) below settles the intra-op pool as well).
os.environ.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")

import functools
import hashlib
import platform
import re
import sys
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, TextIO

import click
import numpy as np
import torch
from torch import nn

from resumeproof.common import fingerprint, losslog, protocol, runfiles
from resumeproof.kit import checkpoint as ckpt
from resumeproof.kit import eager, flat, rng, rundir, signals
from resumeproof.kit.rng import Generators

HERE = Path(__file__).resolve().parent
DATA_FILE = HERE / "data" / "synthetic.csv"
# The code identity: the trainer and every module that decides what it computes or restores.
KIT = HERE / "resumeproof" / "kit"
CODE_FILES = [Path(__file__).resolve(), *(KIT / m for m in ("checkpoint.py", "rng.py", "eager.py"))]


@dataclass(frozen=True, kw_only=True)
class Experiment:
    rows: int = 24  # synthetic data set size (data/synthetic.csv)
    inputs: int = 2  # input variables per row
    hidden: int = 8  # 2 -> 8 -> 1 gives 33 parameters
    dropout: float = 0.25  # masks drawn from torch's default generator
    batch: int = 4  # rows per update: 6 updates per epoch
    lr: float = 0.03  # Adam
    lr_step: int = 3  # StepLR step_size
    lr_gamma: float = 0.5  # StepLR gamma
    input_noise: float = 0.02  # std of the NumPy noise added to each input
    gain_jitter: float = 0.05  # Python random draws a gain in [1 - jitter, 1 + jitter] per batch
    seed: int = 0
    dtype: str = "float64"

    def __post_init__(self) -> None:
        if self.rows % self.batch:
            raise ValueError(f"Experiment.batch={self.batch} must divide Experiment.rows={self.rows}")
        if self.seed < 0:
            raise ValueError(f"Experiment.seed must be >= 0, got {self.seed}")


# What a resume restores, part by part; `--omit` skips parts to show that the verifier notices.
RNG_PARTS = {"rng-python": rng.PYTHON, "rng-numpy": rng.NUMPY, "rng-torch": rng.TORCH}
# What `--override KEY=VALUE` may change on resume, and the optimizer/scheduler constants it moves.
PIVOTS = {"lr": frozenset({"lr", "initial_lr", "base_lrs"})}
PARTS = ("model", "optimizer", "scheduler", *RNG_PARTS, "data", "progress")


@dataclass(frozen=True, kw_only=True)
class Run:
    output: Path  # run directory: must not exist, unless resuming in place
    steps: int | None = None  # updates this process runs ...
    until_step: int | None = None  # ... or: run until this global step is reached
    resume: Path | None = None  # checkpoint to continue from
    resume_auto: bool = False  # continue in place from the newest valid generation in `output`
    resume_flat: Path | None = None  # start from a flat file of weights and Adam moments (not enough)
    omit: frozenset[str] = frozenset()  # parts NOT restored on resume (a deliberate fault)
    override: bool = False  # accept a checkpoint from other code, data or versions
    checkpoint_every: int = 0  # also write generation step_NNNNNN.pt every K steps (0: never)
    keep: int = 3  # generations kept; an older one goes only after a newer one is verified
    pace: float = 0.0  # seconds to sleep after each update: a testing aid, changes no computed value
    pivot: dict[str, float] = field(default_factory=dict)  # --override KEY=VALUE: a deliberate change on resume


class RunError(Exception):
    """The run cannot start: bad output directory or data."""


# -- data, model, progress ----------------------------------------------------------------------


@dataclass(frozen=True)
class Data:
    x: torch.Tensor
    y: torch.Tensor
    sha256: str


def load_data(exp: Experiment) -> Data:
    raw = DATA_FILE.read_bytes()
    table = np.loadtxt(DATA_FILE, delimiter=",", skiprows=1, dtype=np.float64, ndmin=2)
    if table.shape != (exp.rows, exp.inputs + 1):
        raise RunError(f"{DATA_FILE}: shape {table.shape}, expected ({exp.rows}, {exp.inputs + 1})")
    tensor = torch.from_numpy(table)
    return Data(x=tensor[:, : exp.inputs], y=tensor[:, exp.inputs :], sha256=hashlib.sha256(raw).hexdigest())


def build(exp: Experiment) -> tuple[nn.Module, torch.optim.Optimizer, torch.optim.lr_scheduler.LRScheduler]:
    model = nn.Sequential(
        nn.Linear(exp.inputs, exp.hidden), nn.Tanh(), nn.Dropout(exp.dropout), nn.Linear(exp.hidden, 1)
    )
    optimizer = torch.optim.Adam(model.parameters(), lr=exp.lr)
    # The scheduler must exist before optimizer.load_state_dict(): its constructor writes the
    # initial lr into the param groups and would overwrite a restored one.
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=exp.lr_step, gamma=exp.lr_gamma)
    return model, optimizer, scheduler


@dataclass
class Progress:
    """Where the run is: updates done, and the position inside the current epoch's permutation."""

    step: int
    epoch: int
    cursor: int
    permutation: list[int]
    history: list[dict[str, Any]]

    def take(self, batch: int, numpy_rng: np.random.Generator) -> list[int]:
        if self.cursor == len(self.permutation):  # drawn lazily, so a checkpoint at an epoch end
            self.permutation = numpy_rng.permutation(len(self.permutation)).tolist()  # holds no
            self.epoch, self.cursor = self.epoch + 1, 0  # draw that belongs to the next update
        rows = self.permutation[self.cursor : self.cursor + batch]
        self.cursor += batch
        return rows


def fresh_progress(exp: Experiment, gens: Generators) -> Progress:
    return Progress(0, 0, 0, gens.numpy.permutation(exp.rows).tolist(), [])


# -- one update ---------------------------------------------------------------------------------


def train_step(
    exp: Experiment, model: nn.Module, optimizer: torch.optim.Optimizer, scheduler: Any, gens: Generators,
    data: Data, progress: Progress,
) -> dict[str, Any]:  # fmt: skip
    rows = progress.take(exp.batch, gens.numpy)
    noise = torch.from_numpy(gens.numpy.normal(0.0, exp.input_noise, size=(exp.batch, exp.inputs)))
    gain = 1.0 + gens.python.uniform(-exp.gain_jitter, exp.gain_jitter)
    lr = optimizer.param_groups[0]["lr"]
    optimizer.zero_grad()
    loss = nn.functional.mse_loss(model((data.x[rows] + noise) * gain), data.y[rows])
    loss.backward()
    optimizer.step()
    scheduler.step()
    progress.step += 1
    return {"step": progress.step, "rows": rows, "lr": lr, "loss": loss.item()}


# -- checkpoint: capture and restore mirror each other, section by section ---------------------


def capture(exp: Experiment, model, optimizer, scheduler, gens: Generators, progress: Progress, data: Data) -> dict:
    return {
        ckpt.FORMAT_KEY: ckpt.FORMAT,
        ckpt.MODEL: dict(model.state_dict()),
        ckpt.OPTIMIZER: optimizer.state_dict(),
        ckpt.SCHEDULER: scheduler.state_dict(),
        ckpt.RNG: gens.state(),
        ckpt.DATA: {
            "permutation": torch.tensor(progress.permutation, dtype=torch.int64),
            "cursor": progress.cursor,
            "epoch": progress.epoch,
        },
        ckpt.PROGRESS: {"step": progress.step},
        ckpt.HISTORY: progress.history,
        ckpt.CONFIG: asdict(exp),
        ckpt.VERSIONS: versions(),
        ckpt.IDENTITY: identity(data),
    }


def restore(state: dict, model, optimizer, scheduler, progress: Progress, omit: frozenset[str]) -> None:
    """Model, scheduler, optimizer, then data position, progress and history; the generators are left
    to the caller, to be restored last, right before the loop. An omitted part keeps its freshly
    built state, exactly what a careless resume does."""
    if "model" not in omit:
        model.load_state_dict(state[ckpt.MODEL])
    if "scheduler" not in omit:
        scheduler.load_state_dict(state[ckpt.SCHEDULER])
    if "optimizer" not in omit:
        optimizer.load_state_dict(state[ckpt.OPTIMIZER])
    if "data" not in omit:
        data = state[ckpt.DATA]
        progress.epoch, progress.cursor, progress.permutation = (
            data["epoch"],
            data["cursor"],
            data["permutation"].tolist(),
        )
    if "progress" not in omit:
        progress.step, progress.history = state[ckpt.PROGRESS]["step"], list(state[ckpt.HISTORY])


def versions() -> dict[str, str]:
    return {"python": platform.python_version(), "torch": str(torch.__version__), "numpy": np.__version__}


@functools.cache
def code_sha256() -> str:
    code = hashlib.sha256()
    for path in CODE_FILES:
        code.update(path.name.encode() + b"\0" + path.read_bytes())
    return code.hexdigest()


def identity(data: Data) -> dict[str, str]:
    return {"code_sha256": code_sha256(), "data_sha256": data.sha256}


def expected(
    exp: Experiment, model: nn.Module, optimizer, scheduler, data: Data, pivot: frozenset[str] = frozenset()
) -> ckpt.Expected:
    """What a checkpoint must match, read off the freshly built (not yet restored) objects."""
    counters = {"params", "lr", "last_epoch"}  # what a run changes; every other public key is a constant
    return ckpt.Expected(
        params={name: tuple(t.shape) for name, t in model.state_dict().items()},
        hyper={
            ckpt.OPTIMIZER: {k: v for k, v in optimizer.param_groups[0].items() if k not in counters},
            ckpt.SCHEDULER: {k: v for k, v in scheduler.state_dict().items() if k not in counters and k[0] != "_"},
        },
        config=asdict(exp),
        identity=identity(data),
        versions=versions(),
        pivot=pivot,
        rows=exp.rows,
        batch=exp.batch,
    )


def restore_flat(saved: flat.Flat, model: nn.Module, optimizer) -> None:
    """All a flat file can give back: weights and Adam moments (as float32) and Adam's step count.
    Everything else keeps its freshly built state: scheduler, generators, data position, progress."""
    params = list(model.parameters())
    if len(saved.weights) != sum(p.numel() for p in params):
        raise RunError(
            f"flat file holds {len(saved.weights)} parameters, the model has {sum(p.numel() for p in params)}"
        )
    state, offset = {}, 0
    with torch.no_grad():
        for i, p in enumerate(params):
            chunk = slice(offset, offset + p.numel())
            p.copy_(torch.from_numpy(saved.weights[chunk]).view_as(p))
            state[i] = {
                "step": torch.tensor(float(saved.step)),
                "exp_avg": torch.from_numpy(saved.m[chunk]).view_as(p).to(p.dtype),
                "exp_avg_sq": torch.from_numpy(saved.v[chunk]).view_as(p).to(p.dtype),
            }
            offset += p.numel()
    optimizer.load_state_dict({"state": state, "param_groups": optimizer.state_dict()["param_groups"]})


def apply_pivot(pivot: dict[str, float], optimizer, scheduler) -> dict[str, list[float]]:
    """Move the restored run onto the new lr: the schedule keeps its place, scaled to the new base."""
    changed = {}
    if "lr" in pivot and pivot["lr"] != scheduler.base_lrs[0]:  # restating the current lr is no pivot
        group, old = optimizer.param_groups[0], scheduler.base_lrs[0]
        group["lr"] *= pivot["lr"] / old
        group["initial_lr"] = pivot["lr"]
        scheduler.base_lrs = [pivot["lr"]]
        scheduler._last_lr = [group["lr"]]  # what get_last_lr() reports until the next step
        changed["lr"] = [old, pivot["lr"]]
    return changed


# -- summary.json: the comparison surface -------------------------------------------------------


def plain(value: Any) -> Any:
    """A JSON tree from a state dict: tensors to (nested) lists, tuples to lists, keys to strings."""
    if isinstance(value, torch.Tensor):
        return value.tolist()
    if isinstance(value, dict):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    return value


def evaluate(model: nn.Module, data: Data) -> dict[str, Any]:
    model.eval()  # no dropout, so evaluation draws nothing from any generator
    with torch.no_grad():
        predictions = model(data.x)
    model.train()
    return {"mse": nn.functional.mse_loss(predictions, data.y).item(), "predictions": predictions.flatten().tolist()}


def summarize(model, optimizer, scheduler, gens: Generators, progress: Progress, data: Data) -> dict:
    return {
        "protocol": protocol.PROTOCOL,
        "step": progress.step,
        "history": progress.history,
        "state": {
            "params": plain(model.state_dict()),
            "optimizer": plain(optimizer.state_dict()),
            "scheduler": plain(scheduler.state_dict()),
            "progress": {"epoch": progress.epoch, "cursor": progress.cursor, "permutation": progress.permutation},
        },
        "next": {"lr": optimizer.param_groups[0]["lr"], "rng": gens.peek()},
        "eval": evaluate(model, data),
    }


# -- the run ------------------------------------------------------------------------------------


def refuse_existing(output: Path) -> None:
    if output.exists() or output.is_symlink():
        raise RunError(f"--output {output}: already exists; refusing to touch it")


def make_output_dir(output: Path) -> None:
    output.parent.mkdir(parents=True, exist_ok=True)
    try:
        output.mkdir()  # fails, rather than merging, if another process created it meanwhile
    except FileExistsError:
        raise RunError(f"--output {output}: created by someone else meanwhile; refusing to touch it") from None


# What a run directory may hold; anything else means it is not one, and resuming in place refuses it.
OWN_FILES = re.compile(r"(step_\d{6}\.pt|checkpoint\.pt)(\.sha256)?|summary\.json|loss\.jsonl|\.lock|\..+\.tmp-\d+")


def warn(message: str) -> None:
    click.echo(f"train.py: {message}", err=True)


def open_in_place(r: Run, load) -> tuple[TextIO, tuple[Path, rundir.Loaded] | None]:
    """--resume auto: lock the run directory (creating it if absent), clear what killed writers left,
    and find the newest valid generation. A directory whose checkpoints are all invalid is refused
    rather than started over; one that holds no checkpoint at all (a run killed before its first
    one) starts from the beginning."""
    r.output.mkdir(parents=True, exist_ok=True)
    strangers = sorted(p.name for p in r.output.iterdir() if not OWN_FILES.fullmatch(p.name))
    if strangers:
        raise RunError(f"--output {r.output}: not a run directory (holds {', '.join(strangers[:3])}); refusing")
    held = rundir.lock(r.output)
    for stale in rundir.remove_temporaries(r.output):
        warn(f"removed {stale}, left by an interrupted write")
    found = rundir.newest_valid(r.output, load, r.output / protocol.CHECKPOINT, warn)
    if found is None and (runfiles.generations(r.output) or (r.output / protocol.CHECKPOINT).exists()):
        raise RunError(f"--output {r.output}: holds checkpoints but no valid one; refusing to start over on top")
    return held, found


@dataclass
class Start:
    """Where a process starts from, and what its history and checkpoints must record about it."""

    source: Path | None
    overridden: list[str] = field(default_factory=list)  # identity differences --override-identity accepted
    pivoted: dict[str, list[float]] = field(default_factory=dict)  # --override: key -> [old, new]
    provenance: list[dict[str, Any]] = field(default_factory=list)  # every pivot of the run so far
    generators: list[str] = field(default_factory=list)  # the generators to restore, last


def resume_from(loaded: rundir.Loaded, source: Path | None, r: Run, model, optimizer, scheduler, progress) -> Start:
    """Restore a loaded checkpoint (all but the generators) and apply a declared pivot."""
    state, overridden = loaded
    restore(state, model, optimizer, scheduler, progress, r.omit)
    provenance = list(state.get(ckpt.PROVENANCE, []))
    pivoted = apply_pivot(r.pivot, optimizer, scheduler)
    if pivoted:
        provenance.append({"step": progress.step, "pivot": pivoted})
    generators = [name for part, name in RNG_PARTS.items() if part not in r.omit]
    return Start(source, overridden, pivoted, provenance, generators)


def configure_torch() -> None:
    torch.set_num_threads(1)
    torch.set_default_dtype(torch.float64)
    # torch.use_deterministic_algorithms(True) also imports the inductor config (with TorchDynamo,
    # over a second) to configure a compiler this eager run never uses; set only the eager flag.
    torch._C._set_deterministic_algorithms(True)
    eager.skip_dynamo_import()


def run(exp: Experiment, r: Run) -> None:
    started = time.perf_counter()
    if not r.resume_auto:
        refuse_existing(r.output)  # checked first, so a refused run leaves nothing behind
    configure_torch()
    data = load_data(exp)
    gens = Generators.seeded(exp.seed)
    model, optimizer, scheduler = build(exp)
    progress = fresh_progress(exp, gens)

    moved = frozenset().union(*(PIVOTS[key] for key in r.pivot))

    def load(path: Path) -> rundir.Loaded:
        return ckpt.load(path, expected(exp, model, optimizer, scheduler, data, moved), r.override)

    source, loaded = r.resume, None
    if r.resume_auto:
        held, found = open_in_place(r, load)
        if found is not None:
            source, loaded = found
    elif r.resume is not None:
        loaded = load(r.resume)
    start = Start(source)
    if loaded is not None:
        start = resume_from(loaded, source, r, model, optimizer, scheduler, progress)
        gens.restore(loaded[0][ckpt.RNG], start.generators)  # last: nothing may draw between this and the loop
    elif r.pivot:
        raise RunError("--override changes a resumed run; there is nothing to resume here")
    overridden, pivoted, provenance = start.overridden, start.pivoted, start.provenance
    if r.resume_flat is not None:
        restore_flat(flat.read(r.resume_flat), model, optimizer)
        source = r.resume_flat
    if not r.resume_auto:
        make_output_dir(r.output)
        held = rundir.lock(r.output)
    steps = r.steps if r.steps is not None else (r.until_step or 0) - progress.step
    if steps < 0:
        raise RunError(f"--until-step {r.until_step}: the run is already at step {progress.step}")
    # Handlers before the start line: a supervisor may signal as soon as it reads that line.
    requests = signals.Requests().install()
    log = r.output / losslog.NAME
    replayed = losslog.start(
        log, progress.step, pid=os.getpid(), resumed_from=str(source) if source else None, pivot=pivoted or None
    )
    ready = time.perf_counter()

    def write(path: Path) -> str:
        state = capture(exp, model, optimizer, scheduler, gens, progress, data)
        return ckpt.save(path, state | {ckpt.PROVENANCE: provenance})

    for i in range(steps):
        record = train_step(exp, model, optimizer, scheduler, gens, data, progress)
        if i == 0 and overridden:
            record["override"] = overridden  # compared, so an overridden resume is never concordant
        if i == 0 and pivoted:
            record["pivot"] = pivoted  # likewise: a pivoted run is another run from here on
        progress.history.append(record)
        losslog.append(log, {**record, "replay": True} if record["step"] in replayed else record)
        asked = requests.take_snapshot()
        if asked or requests.stop or (r.checkpoint_every and progress.step % r.checkpoint_every == 0):
            write(runfiles.generation(r.output, progress.step))
            rundir.prune(r.output, r.keep)
        if requests.stop:
            losslog.append(log, {"event": "stop", "signal": requests.stop, "step": progress.step})
            break
        time.sleep(r.pace)
    trained = time.perf_counter()

    digest = write(r.output / protocol.CHECKPOINT)
    written = time.perf_counter()
    summary = summarize(model, optimizer, scheduler, gens, progress, data)
    summary["meta"] = {  # never compared: the omitted parts must show in behaviour, not in a label
        "argv": sys.argv,
        "resumed_from": str(source) if source else None,
        "omitted": sorted(r.omit),
        "checkpoint_every": r.checkpoint_every,
        "stopped_by": requests.stop,
        "provenance": provenance,
        "pace": r.pace,
        "checkpoint_sha256": digest,
        "versions": versions(),
        "identity": identity(data),
        "threads": torch.get_num_threads(),
        "dtype": str(torch.get_default_dtype()).removeprefix("torch."),
        "device": "cpu",
        "seconds": {"setup": ready - started, "train": trained - ready, "checkpoint": written - trained},
    }
    fingerprint.write_atomic(r.output / protocol.SUMMARY, protocol.dumps(summary).encode())
    held.close()


def parse_parts(ctx: click.Context, param: click.Parameter, value: str | None) -> frozenset[str]:
    parts = frozenset(part.strip() for part in value.split(",")) if value else frozenset()
    unknown = sorted(parts - set(PARTS))
    if unknown:
        raise click.BadParameter(f"unknown part {', '.join(unknown)}; valid parts: {', '.join(PARTS)}")
    return parts


AUTO = "auto"


def parse_pivots(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> dict[str, float]:
    pivots = {}
    for item in values:
        key, _, value = item.partition("=")
        if key not in PIVOTS:
            raise click.BadParameter(f"{item!r}: only {', '.join(PIVOTS)} can change on resume")
        try:
            pivots[key] = float(value)
        except ValueError:
            raise click.BadParameter(f"{item!r}: {value!r} is not a number") from None
        if not pivots[key] > 0:
            raise click.BadParameter(f"{item!r}: must be > 0")
    return pivots


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--steps", type=click.IntRange(min=0), help="Updates this process runs.")
@click.option("--until-step", type=click.IntRange(min=0), help="Instead of --steps: run until this global step.")
@click.option("--output", type=click.Path(path_type=Path), required=True, help="Run directory; must not exist.")
@click.option("--resume", help="Checkpoint to continue from, or 'auto': continue in place in --output.")
@click.option("--resume-flat", type=click.Path(path_type=Path), help="Start from a flat weights+moments file only.")
@click.option("--omit-rng-restore", is_flag=True, help="Resume WITHOUT restoring the random generators.")
@click.option(
    "--omit", callback=parse_parts, metavar="PART[,PART...]", help=f"Resume WITHOUT restoring: {', '.join(PARTS)}."
)
@click.option("--checkpoint-every", type=click.IntRange(min=1), help="Also write step_NNNNNN.pt every K steps.")
@click.option("--keep", type=click.IntRange(min=1), default=3, show_default=True, help="Generations kept.")
@click.option("--pace", type=click.FloatRange(min=0), default=0.0, help="Sleep after each update (testing aid).")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Seed of all generators.")
@click.option("--hidden", type=click.IntRange(min=1), default=8, show_default=True, help="Hidden width (4H+1 params).")
@click.option("--override-identity", is_flag=True, help="Resume a checkpoint from other code, data or versions.")
@click.option(
    "--override", "pivots", multiple=True, callback=parse_pivots, metavar="KEY=VALUE",
    help=f"Change the experiment on resume (a recorded pivot): {', '.join(PIVOTS)}.",
)  # fmt: skip
@click.option("--debug", is_flag=True, help="Show tracebacks.")
def main(
    steps, until_step, output, resume, resume_flat, omit_rng_restore, omit, checkpoint_every, keep, pace, seed,
    hidden, override_identity, pivots, debug,
) -> None:  # fmt: skip
    """Train the reference experiment and write a complete, fingerprinted checkpoint.

    SIGTERM: finish the update, write a checkpoint, stop (exit 0). SIGUSR1: write one and carry on.
    """
    if (steps is None) == (until_step is None):
        raise click.UsageError("give exactly one of --steps and --until-step")
    omit = omit | (frozenset(RNG_PARTS) if omit_rng_restore else frozenset())
    if omit and resume is None:
        raise click.UsageError("--omit and --omit-rng-restore need --resume")
    if resume_flat is not None and resume is not None:
        raise click.UsageError("give --resume or --resume-flat, not both")
    settings = Run(
        output=output, steps=steps, until_step=until_step, resume=None if resume in (None, AUTO) else Path(resume),
        resume_auto=resume == AUTO, omit=omit, override=override_identity, checkpoint_every=checkpoint_every or 0,
        keep=keep, pace=pace, pivot=pivots, resume_flat=resume_flat,
    )  # fmt: skip
    try:
        run(replace(Experiment(seed=seed, hidden=hidden), **pivots), settings)
    except (RunError, ckpt.CheckpointError, rundir.RunDirError, flat.FlatError, OSError) as err:
        if debug:
            raise
        click.echo(f"train.py: error: {err}", err=True)
        sys.exit(2)


if __name__ == "__main__":
    main()
