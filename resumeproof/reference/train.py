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
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import click
import numpy as np
import torch
from torch import nn

from resumeproof import kit
from resumeproof.common.protocol import DATA, MODEL, OPTIMIZER, PROGRESS, SCALER, SCHEDULER, rng_part, standard_parts
from resumeproof.kit import data, flat, generators, layout, pivot, resume, torch_setup
from resumeproof.kit.distributed import reduce, single, tree
from resumeproof.kit.distributed import state as dcp_state
from resumeproof.kit.layout import CONFIG, FORMAT, FORMAT_KEY, HISTORY, IDENTITY, PROVENANCE, RNG, VERSIONS

PROG = "train.py"  # how this trainer signs its messages, whichever way it was started
DATA_FILE = Path(__file__).with_name("synthetic.csv")  # package data; data/make_data.py regenerates it
# The code identity: this module and the kit modules that decide what it computes or restores.
CODE = [Path(inspect.getfile(module)) for module in (sys.modules[__name__], generators, layout, data, torch_setup,
                                                     pivot, resume, single, reduce, tree, dcp_state)]  # fmt: skip
DROPOUT_RNG: dict[str, dict[str, Any]] = {"cpu": {"torch": torch.default_generator}, "cuda": {"cuda": torch.cuda}}
AUTOCAST = {"bf16": torch.bfloat16, "fp16": torch.float16}  # half-precision forward passes, float32 weights
PRECISIONS = ("float64", "float32", *AUTOCAST)  # fp16 also scales the loss: a GradScaler, the part "scaler"
PARTS = (*standard_parts(("python", "numpy", "torch", "cuda")), SCALER, *kit.distributed.RANK_PARTS)  # in any run
Par = kit.distributed.Parallel  # the calls of one process, or of this rank of a torchrun group


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
    gens = kit.Generators(python=random.Random(exp.seed), numpy=np.random.Generator(np.random.PCG64(exp.seed)),
                          **DROPOUT_RNG[exp.device])  # fmt: skip
    model = Net(exp).to(exp.device)
    prepare(model)  # under torchrun: DDP, or FSDP2 sharding the parameters before the optimizer sees them
    optimizer = torch.optim.Adam(model.parameters(), lr=exp.lr)
    # Before optimizer.load_state_dict(): the scheduler's constructor writes the initial lr into the param groups.
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=exp.lr_step, gamma=exp.lr_gamma)
    order = kit.ShuffledOrder.fresh(exp.rows, gens["numpy"])
    scaler = torch.amp.GradScaler(exp.device, 2.0**8, growth_interval=4, enabled=exp.precision == "fp16")  # fp16 only
    return layout.Training(model=model, optimizer=optimizer, scheduler=scheduler, generators=gens, order=order,
                           scaler=scaler)  # fmt: skip


# Under torchrun par's state dicts are DCP's and par.save writes a DCP directory; one process: torch.save.
def checkpoint(t: layout.Training, par: Par, config: dict, identity: dict, provenance: list) -> dict[str, Any]:
    """Every state that decides the next updates, after a completed update; restore() mirrors it."""
    model, optimizer = par.get_state_dict(t.model, t.optimizer)
    return {
        FORMAT_KEY: FORMAT,
        MODEL: model,
        OPTIMIZER: optimizer,
        SCHEDULER: t.scheduler.state_dict(),
        **({SCALER: t.scaler.state_dict()} if t.has_scaler else {}),  # fp16: the loss scale, its growth tracker
        RNG: t.generators.state(),  # on CUDA: every device's generator (the dropout masks), as torch.cuda saves it
        DATA: t.order.state_dict(),  # the epoch's permutation, the position in it, the epoch
        PROGRESS: {"step": t.step},
        HISTORY: t.history,
        CONFIG: config,  # checked on resume, never restored: another experiment is refused
        VERSIONS: kit.versions(),  # these two differ only when --override-identity accepts it
        IDENTITY: identity,
        PROVENANCE: provenance,  # the deliberate pivots the run went through
    }


def restore(state: dict[str, Any], t: layout.Training, par: Par, omit: frozenset[str]) -> None:
    """checkpoint() back, section by section, generators last; an omitted part keeps its freshly built state."""
    model, optimizer = state[MODEL] if MODEL not in omit else None, state[OPTIMIZER] if OPTIMIZER not in omit else None
    par.set_state_dict(t.model, t.optimizer, model_state_dict=model, optim_state_dict=optimizer)
    if SCHEDULER not in omit:
        t.scheduler.load_state_dict(state[SCHEDULER])
    if t.has_scaler and SCALER not in omit:
        t.scaler.load_state_dict(state[SCALER])
    if DATA not in omit:
        t.order.load_state_dict(state[DATA])
    if PROGRESS not in omit:
        t.step, t.history = state[PROGRESS]["step"], list(state[HISTORY])
    # Last, right before the loop: nothing may draw from a generator between its restore and the first update.
    t.generators.restore(state[RNG], [name for name in t.generators.names if rng_part(name) not in omit])


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


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@kit.flags.click_options(PARTS, long_runs=True)
@click.option("--resume-flat", type=click.Path(path_type=Path), help="Start from a flat weights+moments file only.")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Seed of all generators.")
@click.option("--hidden", type=click.IntRange(min=1), default=8, show_default=True, help="Hidden width (4H+1 params).")
@click.option("--device", type=click.Choice(tuple(DROPOUT_RNG)), default="cpu", help="cuda: the GPU (docs/gpu.md).")
@click.option("--precision", type=click.Choice(PRECISIONS), default="float64", help="bf16, fp16: autocast (AMP).")
@click.option("--override-identity", is_flag=True, help="Resume a checkpoint from other code, data or versions.")
@click.option("--pivot", "pivots", multiple=True, metavar="KEY=VALUE",
              help=f"Change the experiment on resume (recorded): {', '.join(pivot.PIVOTS)}.")  # fmt: skip
@kit.distributed.click_options
@click.option("--debug", is_flag=True, help="Show tracebacks.")
def main(protocol, resume_flat, seed, hidden, device, precision, override_identity, pivots, distributed, debug) -> None:
    """Train the reference experiment and write a fingerprinted checkpoint; also on SIGUSR1, and on SIGTERM to stop."""
    if resume_flat is not None and (protocol.resume is not None or protocol.resume_auto):
        raise click.UsageError("give --resume or --resume-flat, not both")
    if kit.distributed.launched():  # each rank refuses alone, before a group can half-form
        with kit.exit_on_error(kit.distributed.signed(PROG), debug):
            if (device, precision) != ("cpu", "float64"):  # NCCL, mixed precision: not covered
                said = f"--device {device} --precision {precision}"
                raise kit.ResumeproofError(f"{said}: torchrun runs cpu float64, no NCCL")
            if resume_flat is not None:
                raise kit.ResumeproofError("--resume-flat: a flat file resumes one process, not a torchrun group")
    with kit.distributed.session(PROG, debug, distributed) as world:  # under torchrun: the gloo group
        started = time.perf_counter()
        changes = pivot.parse(pivots)  # a pivot is a change of the experiment, declared on a resume
        exp = Experiment(seed=seed, hidden=hidden, lr=changes.get("lr", Experiment.lr), device=device,
                         precision=precision)  # fmt: skip
        if device == "cuda" and not torch.cuda.is_available():
            raise kit.ResumeproofError(f"--device cuda: CUDA is not available (torch {torch.__version__})")
        own = layout.parts(("python", "numpy", *DROPOUT_RNG[device]), scaler=precision == "fp16")  # this run's parts
        args = kit.flags.build((*own, *kit.distributed.RANK_PARTS), **click.get_current_context().params)  # --omit
        parts = [*own, *(kit.distributed.RANK_PARTS if world is not None else ())]  # one process refuses those itself
        if not args.resume_auto:
            kit.refuse_existing(args.output)  # before any work, so that a refused run leaves nothing behind
        setup = kit.configure_torch(dtype=torch.float64 if precision == "float64" else torch.float32, device=device)
        x, y = load_data(exp)
        par = kit.distributed.parallel(world, distributed, exp.batch)  # one process, or this rank of W
        t = build(exp, par.prepare)
        config, identity = asdict(exp), kit.identity(CODE, [DATA_FILE])
        checks = resume.Options(training=t, config=config, identity=identity, rows_per_step=exp.batch,
                                accept_foreign=override_identity, pivot=changes,
                                warn=lambda message: click.echo(f"{PROG}: {message}", err=True))  # fmt: skip
        run_dir, resumed = par.open_run(args, checks)  # found, loaded and validated; nothing restored yet
        source, provenance, marks, pivoted = resume_flat, [], {}, {}
        if resumed is not None:
            restore(resumed.state, t, par, resumed.omit)
            # --pivot lr=V made exp.lr V: the restored schedule moves onto it here, and nowhere else (else a no-op).
            pivoted = pivot.apply_lr(exp.lr, t.optimizer, t.scheduler)
            source, provenance, marks = resumed.source, resumed.provenance(t.step, pivoted), resumed.marks(pivoted)
        elif source is not None:
            flat.restore(flat.read(source), t.model, t.optimizer)  # weights and Adam moments alone: not enough
        run_dir.enter_loop(t.step, resumed_from=str(source) if source else None, pivot=pivoted or None)
        ready = time.perf_counter()

        def save(path: Path) -> str:
            return par.save(path, checkpoint(t, par, config, identity, provenance))

        for i in range(args.updates_from(t.step)):
            record = train_step(exp, t, x, y, par) | (marks if i == 0 else {})
            t.history.append(record)
            run_dir.log(record)
            if run_dir.after_update(t.step, save):  # SIGUSR1, SIGTERM, --checkpoint-every
                break
            time.sleep(args.pace)
        trained = time.perf_counter()
        digest = run_dir.finish(save)
        written = time.perf_counter()
        with torch.no_grad():  # no mask: evaluation draws nothing from any generator
            predictions = t.model(x)
        par.write_summary(  # under torchrun: rank 0, once every rank is done
            args.output, step=t.step, history=t.history,
            state={"params": t.model.state_dict(), "optimizer": t.optimizer.state_dict(),
                   "scheduler": t.scheduler.state_dict(), **({SCALER: t.scaler.state_dict()} if t.has_scaler else {}),
                   "progress": {"epoch": t.order.epoch, "cursor": t.order.cursor, "permutation": t.order.permutation}},
            next={"lr": t.optimizer.param_groups[0]["lr"], "rng": t.generators.peek()},
            eval={"mse": nn.functional.mse_loss(predictions, y).item(), "predictions": predictions.flatten()},
            meta={  # never compared: the omitted parts must show in behaviour, not in a label
                "argv": sys.argv, "resumed_from": str(source) if source else None, "omitted": sorted(args.omit),
                "checkpoint_every": args.checkpoint_every, "stopped_by": run_dir.stopped_by, "provenance": provenance,
                "pace": args.pace, "checkpoint_sha256": digest, "versions": kit.versions(), "identity": identity,
                "threads": setup.threads, "dtype": setup.dtype, "precision": precision, "device": setup.device,
                "gpu": kit.device_identity(setup.device), "torch_setup": setup.path, "parts": parts,
                "seconds": {"setup": ready - started, "train": trained - ready, "checkpoint": written - trained},
                **par.meta(),  # under torchrun: world size, backend, reduction, worker pids
            },
        )  # fmt: skip
        run_dir.close()
