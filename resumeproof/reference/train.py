"""The reference trainer: a small, fully specified training that checkpoints every state; float64 CPU by default.

    python -B -m resumeproof.reference --steps 5 --output runs/a       # in a checkout also: python -B train.py ...
    python -B -m resumeproof.reference --steps 5 --output runs/b --resume runs/a/checkpoint.pt
    python -B -m resumeproof.reference --device cuda --precision fp16 --steps 5 --output runs/g   # docs/gpu.md
    torchrun --standalone --nproc-per-node 2 train.py --steps 10 --output runs/w2   # DDP over gloo, DCP checkpoint

Built on the trainer kit alone, read top to bottom (docs/reference-trainer.md). Every draw covers the whole batch,
so that under torchrun every rank draws the same global batch and computes its rows of it.
"""

import os

# Before torch loads: its thread pools start with one thread whatever the environment says (and configure_torch).
os.environ.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")

import inspect
import random
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import click
import numpy as np
import torch
from torch import nn

from resumeproof import kit
from resumeproof.common.protocol import DATA, LR, MODEL, OPTIMIZER, RANK_PARTS, RNG, SCALER, SCHEDULER, standard_parts
from resumeproof.kit import data, flat, generators, layout, pivot, resume, state_dicts, torch_setup
from resumeproof.kit.distributed import reduce, single, tree
from resumeproof.kit.distributed import state as dcp_state

PROG = "train.py"  # how this trainer signs its messages, whichever way it was started
DATA_FILE = Path(__file__).with_name("synthetic.csv")  # package data; data/make_data.py regenerates it
# The code identity: this module and the kit modules that decide what it computes or restores.
DECIDING = (generators, layout, state_dicts, data, torch_setup, pivot, resume, single, reduce, tree, dcp_state)
CODE = [Path(inspect.getfile(module)) for module in (sys.modules[__name__], *DECIDING)]
DROPOUT_RNG: dict[str, dict[str, Any]] = {"cpu": {"torch": torch.default_generator}, "cuda": {"cuda": torch.cuda}}
AUTOCAST = {"bf16": torch.bfloat16, "fp16": torch.float16}  # half-precision forward passes, float32 weights
PRECISIONS = ("float64", "float32", *AUTOCAST)  # fp16 also scales the loss: a GradScaler, the part "scaler"
PARTS = (*standard_parts(("python", "numpy", "torch", "cuda")), SCALER, *RANK_PARTS)  # of any run: --omit's table
Par = kit.distributed.Parallel  # the calls of one process, or of this rank of a torchrun group


@dataclass(frozen=True, kw_only=True)
class Started:
    """Where the updates start from: a resumed checkpoint (with its pivots), a flat file, or nothing."""

    source: Path | None = None  # meta.resumed_from
    provenance: list[dict[str, Any]] = field(default_factory=list)  # every pivot of the run so far
    marks: dict[str, Any] = field(default_factory=dict)  # for the first resumed record: a pivot, a foreign identity
    pivoted: dict[str, list[float]] = field(default_factory=dict)  # what this resume's pivot changed


@dataclass(frozen=True, kw_only=True)
class Experiment:
    rows: int = 24  # synthetic data set size (synthetic.csv)
    inputs: int = 2  # input variables per row
    hidden: int = 8  # 2 -> 8 -> 1 gives 33 parameters
    dropout: float = 0.25  # masks drawn from the device's generator
    batch: int = 4  # rows per update: 6 updates per epoch
    lr: float = 0.03  # Adam; --pivot lr=V makes it V from a resume on
    lr_step: int = 3  # StepLR step_size
    lr_gamma: float = 0.5  # StepLR gamma
    input_noise: float = 0.02  # std of the NumPy noise added to each input
    gain_jitter: float = 0.05  # Python random draws a gain in [1 - jitter, 1 + jitter] per batch
    seed: int = 0
    device: str = "cpu"  # or "cuda": the current GPU, set up for an exact run (docs/gpu.md)
    precision: str = "float64"  # float32, or autocast over float32 weights: bf16, fp16 (with a GradScaler)

    def __post_init__(self) -> None:
        if self.rows % self.batch:
            raise ValueError(f"Experiment.batch={self.batch} must divide Experiment.rows={self.rows}")
        if self.seed < 0:
            raise ValueError(f"Experiment.seed must be >= 0, got {self.seed}")


def load_data(exp: Experiment) -> tuple[torch.Tensor, torch.Tensor]:
    table = np.loadtxt(DATA_FILE, delimiter=",", skiprows=1, dtype=np.float64, ndmin=2)
    if table.shape != (exp.rows, exp.inputs + 1):
        raise kit.ResumeproofError(f"{DATA_FILE}: shape {table.shape}, expected ({exp.rows}, {exp.inputs + 1})")
    x, y = torch.from_numpy(table[:, : exp.inputs]), torch.from_numpy(table[:, exp.inputs :])
    return x.to(exp.device, torch.get_default_dtype()), y.to(exp.device, torch.get_default_dtype())  # the weights'


class Net(nn.Module):  # 2 -> 8 -> 1 with tanh; dropout multiplies by a mask the caller draws for the whole batch
    def __init__(self, exp: Experiment) -> None:
        super().__init__()
        self.hidden, self.out = nn.Linear(exp.inputs, exp.hidden), nn.Linear(exp.hidden, 1)

    def forward(self, x: torch.Tensor, keep: torch.Tensor | None = None) -> torch.Tensor:
        h = torch.tanh(self.hidden(x))
        return self.out(h if keep is None else h * keep)


def build(exp: Experiment, prepare: Callable[[nn.Module], None] = lambda model: None) -> layout.Training:
    torch.manual_seed(exp.seed)  # the initial weights (drawn on the CPU), then the dropout masks (on the device)
    gens = kit.Generators(
        python=random.Random(exp.seed), numpy=np.random.Generator(np.random.PCG64(exp.seed)), **DROPOUT_RNG[exp.device]
    )
    model = Net(exp).to(exp.device)
    prepare(model)  # under torchrun: DDP, or FSDP2 sharding the parameters before the optimizer sees them
    optimizer = torch.optim.Adam(model.parameters(), lr=exp.lr)
    # Before optimizer.load_state_dict(): the scheduler's constructor writes the initial lr into the param groups.
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=exp.lr_step, gamma=exp.lr_gamma)
    order = kit.ShuffledOrder.fresh(exp.rows, gens["numpy"])
    scaler = torch.amp.GradScaler(exp.device, 2.0**8, growth_interval=4, enabled=exp.precision == "fp16")  # fp16 only
    return layout.Training(
        model=model, optimizer=optimizer, scheduler=scheduler, generators=gens, order=order, scaler=scaler
    )


def train_step(exp: Experiment, t: layout.Training, x: torch.Tensor, y: torch.Tensor, par: Par) -> dict[str, Any]:
    """One update of the global batch; its history record (with the loss scale under fp16)."""
    rows = t.order.take(exp.batch, t.generators["numpy"])
    noise = torch.from_numpy(t.generators["numpy"].normal(0.0, exp.input_noise, size=(exp.batch, exp.inputs))).to(x)
    gain = 1.0 + t.generators["python"].uniform(-exp.gain_jitter, exp.gain_jitter)
    keep = (torch.rand(exp.batch, exp.hidden, device=x.device) >= exp.dropout) / (1.0 - exp.dropout)
    inputs, targets = (x[rows] + noise) * gain, y[rows]
    lr, scale = t.optimizer.param_groups[0]["lr"], t.scaler.get_scale()  # the scale is 1.0 unless fp16
    t.optimizer.zero_grad()
    # One process: the whole batch in one pass. Under torchrun: this rank's rows (the canonical reductions: row by row).
    for part in par.shards():
        with torch.autocast(x.device.type, AUTOCAST.get(exp.precision), enabled=exp.precision in AUTOCAST):
            batch_loss = nn.functional.mse_loss(par.module(inputs[part], keep[part]), targets[part])
        par.backward(t.scaler.scale(batch_loss))  # fp16: the loss times the scale
    loss = par.reduce() / scale  # every gradient is the global batch's now; the global mean loss (/ 2**k: exact)
    t.scaler.step(t.optimizer)  # fp16: unscales the gradients; skips the update if one overflowed
    t.scaler.update()
    t.scheduler.step()
    t.step += 1
    return kit.record(t.step, rows, lr, loss, **({"scale": scale} if t.has_scaler else {}))


def parts(exp: Experiment) -> tuple[str, ...]:
    """What --omit accepts: this run's sections and generators, its GradScaler at fp16, and the rank-local parts,
    which a run without other ranks withdraws (kit.Run)."""
    return (*layout.parts(("python", "numpy", *DROPOUT_RNG[exp.device]), scaler=exp.precision == "fp16"), *RANK_PARTS)


def resume_or_start(run: kit.Run, t: layout.Training, exp: Experiment, par: Par, flat_file: Path | None) -> Started:
    """Restore what the run continues from (generators last, then a declared pivot), or a flat file, or nothing."""
    if run.resumed is None:
        if flat_file is not None:
            flat.restore(flat.read(flat_file), t.model, t.optimizer)  # weights and Adam moments alone: not enough
        return Started(source=flat_file)
    resumed = run.resumed
    # Last, right before the loop: nothing may draw from a generator between its restore and the first update.
    t.generators.restore(resumed.state[RNG], layout.restore(resumed.state, t, resumed.omit, by=par))
    pivoted = pivot.apply_lr(exp.lr, t.optimizer, t.scheduler)  # --pivot lr=V: onto the restored schedule; else a no-op
    provenance, marks = resumed.provenance(t.step, pivoted), resumed.marks(pivoted)
    return Started(source=resumed.source, provenance=provenance, marks=marks, pivoted=pivoted)


def summary(t: layout.Training, x: torch.Tensor, y: torch.Tensor) -> dict[str, Any]:
    """What the verifier compares, under the checkpoint's own names; evaluation draws nothing (no dropout mask)."""
    with torch.no_grad():
        predictions = t.model(x)
    state = {MODEL: t.model.state_dict(), OPTIMIZER: t.optimizer.state_dict(), SCHEDULER: t.scheduler.state_dict()}
    state |= {SCALER: t.scaler.state_dict()} if t.has_scaler else {}
    return {
        "step": t.step,
        "history": t.history,
        "state": {**state, DATA: t.order.state_dict()},
        "next": {LR: t.optimizer.param_groups[0][LR], RNG: t.generators.peek()},
        "eval": {"mse": nn.functional.mse_loss(predictions, y).item(), "predictions": predictions.flatten()},
    }


def meta(run: kit.Run, begun: Started, setup: torch_setup.Setup, exp: Experiment) -> dict[str, Any]:
    """What the summary records and the verifier never compares: an omitted part must show in behaviour."""
    args = run.args
    return {
        "argv": sys.argv,
        "resumed_from": str(begun.source) if begun.source else None,
        "stopped_by": run.stopped_by,
        "checkpoint_every": args.checkpoint_every,
        "pace": args.pace,
        "provenance": begun.provenance,
        "versions": kit.versions(),
        "threads": setup.threads,
        "dtype": setup.dtype,
        "precision": exp.precision,
        "device": setup.device,
        "gpu": kit.device_identity(setup.device),
        "torch_setup": setup.path,
    }


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@kit.flags.click_options(PARTS, long_runs=True)
@click.option("--resume-flat", type=click.Path(path_type=Path), help="Start from a flat weights+moments file only.")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Seed of all generators.")
@click.option("--hidden", type=click.IntRange(min=1), default=8, show_default=True, help="Hidden width (4H+1 params).")
@click.option("--device", type=click.Choice(tuple(DROPOUT_RNG)), default="cpu", help="cuda: the GPU (docs/gpu.md).")
@click.option("--precision", type=click.Choice(PRECISIONS), default="float64", help="bf16, fp16: autocast (AMP).")
@click.option("--override-identity", is_flag=True, help="Resume a checkpoint from other code, data or versions.")
@click.option(
    "--pivot",
    "pivots",
    multiple=True,
    metavar="KEY=VALUE",
    help=f"Change the experiment on resume (recorded): {', '.join(pivot.PIVOTS)}.",
)
@kit.distributed.click_options
@click.option("--debug", is_flag=True, help="Show tracebacks.")
def main(protocol, resume_flat, seed, hidden, device, precision, override_identity, pivots, distributed, debug) -> None:
    """Train the reference experiment and write a fingerprinted checkpoint; also on SIGUSR1, and on SIGTERM to stop."""
    refuse_before_the_group(protocol, resume_flat, device, precision, debug)
    with kit.distributed.session(PROG, debug, distributed) as world:  # under torchrun: the gloo group
        started = time.perf_counter()
        changes = pivot.parse(pivots)  # a pivot is a change of the experiment, declared on a resume
        exp = Experiment(
            seed=seed, hidden=hidden, lr=changes.get("lr", Experiment.lr), device=device, precision=precision
        )
        args = kit.flags.build(parts(exp), **click.get_current_context().params)  # --omit, held to this run's parts
        if not args.resume_auto:
            kit.refuse_existing(args.output)  # before any work, so that a refused run leaves nothing behind
        setup = kit.configure_torch(dtype=torch.float64 if precision == "float64" else torch.float32, device=device)
        x, y = load_data(exp)
        par = kit.distributed.parallel(world, distributed, exp.batch)  # one process, or this rank of W
        t = build(exp, par.prepare)
        config, identity = asdict(exp), kit.identity(CODE, [DATA_FILE])
        checks = resume.Options(
            training=t,
            config=config,
            identity=identity,
            rows_per_step=exp.batch,
            warn=warn,
            accept_foreign=override_identity,
            pivot=changes,
        )  # what a checkpoint must match
        run = par.open_run(args, checks)
        begun = resume_or_start(run, t, exp, par, resume_flat)  # found, loaded and validated by open_run
        run.enter_loop(t.step, resumed_from=str(begun.source) if begun.source else None, pivot=begun.pivoted or None)
        ready = time.perf_counter()

        def save(path: Path) -> str:  # under torchrun: DCP's state dicts, a DCP directory; one process: torch.save
            return par.save(path, layout.capture(t, config, identity, begun.provenance, by=par))

        for i in range(run.args.updates_from(t.step)):
            record = train_step(exp, t, x, y, par) | (begun.marks if i == 0 else {})
            t.history.append(record)
            run.log(record)
            if run.after_update(t.step, save):  # SIGUSR1, SIGTERM, --checkpoint-every
                break
            time.sleep(run.args.pace)
        trained = time.perf_counter()
        digest = run.save_final(save)
        seconds = {"setup": ready - started, "train": trained - ready, "checkpoint": time.perf_counter() - trained}
        described = {"checkpoint_sha256": digest, "identity": identity, "seconds": seconds, **par.meta()}
        run.write_summary(**summary(t, x, y), meta=meta(run, begun, setup, exp) | described)
        run.close()


def refuse_before_the_group(
    protocol: kit.ProtocolArgs, flat_file: Path | None, device: str, precision: str, debug: bool
) -> None:
    """What this trainer refuses on its own, said by every rank alone before a gloo group can half-form."""
    if flat_file is not None and (protocol.resume is not None or protocol.resume_auto):
        raise click.UsageError("give --resume or --resume-flat, not both")
    with kit.exit_on_error(kit.distributed.signed(PROG), debug):
        if kit.distributed.launched() and (device, precision) != ("cpu", "float64"):  # NCCL, mixed precision
            raise kit.ResumeproofError(f"--device {device} --precision {precision}: torchrun runs cpu float64, no NCCL")
        if kit.distributed.launched() and flat_file is not None:
            raise kit.ResumeproofError("--resume-flat: a flat file resumes one process, not a torchrun group")
        if device == "cuda" and not torch.cuda.is_available():
            raise kit.ResumeproofError(f"--device cuda: CUDA is not available (torch {torch.__version__})")


def warn(message: str) -> None:
    """What --resume auto skipped or removed on the way, on stderr."""
    click.echo(f"{PROG}: {message}", err=True)
