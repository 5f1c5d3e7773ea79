"""Reference trainer: a small, fully specified float64 CPU training that checkpoints every state.

    python -B train.py --steps 10 --output runs/continuous
    python -B train.py --steps 5 --output runs/interrupted
    python -B train.py --steps 5 --output runs/resumed --resume runs/interrupted/checkpoint.pt
    torchrun --standalone --nproc-per-node 2 train.py --steps 10 --output runs/w2   # DDP over gloo, DCP checkpoint

It speaks resume-protocol/1 (docs/protocol.md) through the trainer kit (docs/kit.md) and nothing
else. Network 2 -> 8 -> 1 with tanh and dropout (33 parameters), Adam, StepLR. Randomness from
Python's random (a gain per batch), NumPy PCG64 (input noise, epoch permutations) and torch's
default generator (initial weights, dropout masks); every draw covers the whole batch, so that under
torchrun every rank draws the same global batch and computes its rows of it (docs/distributed.md).
"""

import os

# Before torch loads, so that its thread pools are created with one thread whatever the
# environment says (kit.configure_torch settles the intra-op pool as well).
os.environ.update(OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")

import random
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import click
import numpy as np
import torch
from torch import nn

from resumeproof import kit
from resumeproof.kit import flat, layout, pivot

HERE = Path(__file__).resolve().parent
DATA_FILE = HERE / "data" / "synthetic.csv"
# The code identity: this file and the kit modules that decide what it computes or restores.
KIT_CODE = (
    "generators", "layout", "data", "torch_setup", "pivot", "resume",
    "distributed/reduce", "distributed/tree", "distributed/state",  # what a torchrun run computes and restores
)  # fmt: skip
CODE = [Path(__file__).resolve(), *(HERE / "resumeproof" / "kit" / f"{name}.py" for name in KIT_CODE)]
GENERATORS = ("python", "numpy", "torch")
PARTS = (*layout.parts(GENERATORS), *kit.distributed.RANK_PARTS)  # what --omit may name


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


@dataclass(frozen=True, kw_only=True)
class Options:
    """What this trainer adds to the protocol's flags."""

    resume_flat: Path | None = None  # start from a flat file of weights and Adam moments (not enough)
    accept_foreign: bool = False  # --override-identity: resume a checkpoint of other code, data or versions
    pivot: dict[str, float]  # --pivot KEY=VALUE: a deliberate, recorded change on resume
    distributed: kit.distributed.Options  # under torchrun: --reduction, --dist-timeout


def load_data(exp: Experiment) -> tuple[torch.Tensor, torch.Tensor]:
    table = np.loadtxt(DATA_FILE, delimiter=",", skiprows=1, dtype=np.float64, ndmin=2)
    if table.shape != (exp.rows, exp.inputs + 1):
        raise kit.ResumeproofError(f"{DATA_FILE}: shape {table.shape}, expected ({exp.rows}, {exp.inputs + 1})")
    data = torch.from_numpy(table)
    return data[:, : exp.inputs], data[:, exp.inputs :]


class Net(nn.Module):
    """2 -> 8 -> 1 with tanh; dropout multiplies by a mask the caller draws for the whole batch."""

    def __init__(self, exp: Experiment) -> None:
        super().__init__()
        self.hidden, self.out = nn.Linear(exp.inputs, exp.hidden), nn.Linear(exp.hidden, 1)

    def forward(self, x: torch.Tensor, keep: torch.Tensor | None = None) -> torch.Tensor:
        h = torch.tanh(self.hidden(x))
        return self.out(h if keep is None else h * keep)


def build(exp: Experiment, prepare: Callable[[nn.Module], None] = lambda model: None) -> layout.Training:
    torch.manual_seed(exp.seed)  # the initial weights, then the dropout masks
    gens = kit.Generators(
        python=random.Random(exp.seed),
        numpy=np.random.Generator(np.random.PCG64(exp.seed)),
        torch=torch.default_generator,
    )
    model = Net(exp)
    prepare(model)  # under torchrun: DDP, or FSDP2 sharding the parameters before the optimizer sees them
    optimizer = torch.optim.Adam(model.parameters(), lr=exp.lr)
    # The scheduler must exist before optimizer.load_state_dict(): its constructor writes the
    # initial lr into the param groups and would overwrite a restored one.
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=exp.lr_step, gamma=exp.lr_gamma)
    order = kit.ShuffledOrder.fresh(exp.rows, gens["numpy"])
    return layout.Training(model=model, optimizer=optimizer, scheduler=scheduler, generators=gens, order=order)


def train_step(
    exp: Experiment, t: layout.Training, x: torch.Tensor, y: torch.Tensor, par: kit.distributed.Parallel
) -> dict[str, Any]:
    rows = t.order.take(exp.batch, t.generators["numpy"])
    noise = torch.from_numpy(t.generators["numpy"].normal(0.0, exp.input_noise, size=(exp.batch, exp.inputs)))
    gain = 1.0 + t.generators["python"].uniform(-exp.gain_jitter, exp.gain_jitter)
    keep = (torch.rand(exp.batch, exp.hidden) >= exp.dropout) / (1.0 - exp.dropout)
    inputs, targets = (x[rows] + noise) * gain, y[rows]
    lr = t.optimizer.param_groups[0]["lr"]
    t.optimizer.zero_grad()
    # The mean loss of the rows `part` of the global batch, with `module`: all of them in one process,
    # this rank's share under torchrun (or one row at a time for the canonical reduction).
    loss = par.backward(lambda module, part: nn.functional.mse_loss(module(inputs[part], keep[part]), targets[part]))
    t.optimizer.step()
    t.scheduler.step()
    t.step += 1
    return kit.record(t.step, rows, lr, loss)


def evaluate(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> dict[str, Any]:
    with torch.no_grad():  # no mask: evaluation draws nothing from any generator
        predictions = model(x)
    return {"mse": nn.functional.mse_loss(predictions, y).item(), "predictions": predictions.flatten()}


def run(exp: Experiment, args: kit.ProtocolArgs, opts: Options, world: kit.distributed.World | None) -> None:
    started = time.perf_counter()
    if not args.resume_auto:
        kit.refuse_existing(args.output)  # first, so that a refused run leaves nothing behind
    setup = kit.configure_torch()
    x, y = load_data(exp)
    par = kit.distributed.parallel(world, opts.distributed, exp.batch)  # one process, or this rank of W
    t = build(exp, par.prepare)
    config, identity = asdict(exp), kit.identity(CODE, [DATA_FILE])
    expected = layout.Expected.of(t, config, identity, exp.batch, pivot.changed_keys(opts.pivot))
    run_dir, start = par.begin(args, t, expected, warn, opts.accept_foreign, opts.pivot)
    if opts.resume_flat is not None:
        flat.restore(flat.read(opts.resume_flat), t.model, t.optimizer)
        start = replace(start, source=opts.resume_flat)
    steps = args.updates_from(t.step)
    run_dir.start(t.step, resumed_from=str(start.source) if start.source else None, pivot=start.pivot)
    start.restore_generators(t)  # last: nothing may draw between this and the loop
    ready = time.perf_counter()

    def save(path: Path) -> str:
        return par.save(path, t, config, identity, list(start.provenance))  # under torchrun: a DCP directory

    for i in range(steps):
        record = train_step(exp, t, x, y, par) | (start.marks if i == 0 else {})
        t.history.append(record)
        run_dir.log(record)
        if run_dir.after_update(t.step, save):
            break
        time.sleep(args.pace)
    trained = time.perf_counter()
    digest = run_dir.finish(save)
    written = time.perf_counter()
    par.write_summary(  # under torchrun: rank 0, once every rank is done
        args.output,
        step=t.step,
        history=t.history,
        state={
            "params": t.model.state_dict(),
            "optimizer": t.optimizer.state_dict(),
            "scheduler": t.scheduler.state_dict(),
            "progress": {"epoch": t.order.epoch, "cursor": t.order.cursor, "permutation": t.order.permutation},
        },
        next={"lr": t.optimizer.param_groups[0]["lr"], "rng": t.generators.peek()},
        eval=evaluate(t.model, x, y),
        meta={  # never compared: the omitted parts must show in behaviour, not in a label
            "argv": sys.argv, "resumed_from": str(start.source) if start.source else None,
            "omitted": sorted(args.omit), "checkpoint_every": args.checkpoint_every, "stopped_by": run_dir.stopped_by,
            "provenance": list(start.provenance), "pace": args.pace, "checkpoint_sha256": digest,
            "versions": kit.versions(), "identity": identity, "threads": setup.threads, "dtype": setup.dtype,
            "device": "cpu", "torch_setup": setup.path,
            "seconds": {"setup": ready - started, "train": trained - ready, "checkpoint": written - trained},
            **par.meta(),  # under torchrun: world size, backend, reduction, worker pids
        },
    )  # fmt: skip
    run_dir.close()


def warn(message: str) -> None:
    click.echo(f"train.py: {message}", err=True)


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@kit.flags.click_options(PARTS, long_runs=True)
@click.option("--resume-flat", type=click.Path(path_type=Path), help="Start from a flat weights+moments file only.")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Seed of all generators.")
@click.option("--hidden", type=click.IntRange(min=1), default=8, show_default=True, help="Hidden width (4H+1 params).")
@click.option("--override-identity", is_flag=True, help="Resume a checkpoint from other code, data or versions.")
@click.option(
    "--pivot", "pivots", multiple=True, metavar="KEY=VALUE",
    help=f"Change the experiment on resume (recorded): {', '.join(pivot.PIVOTS)}.",
)  # fmt: skip
@kit.distributed.click_options
@click.option("--debug", is_flag=True, help="Show tracebacks.")
def main(protocol: kit.ProtocolArgs, resume_flat, seed, hidden, override_identity, pivots, distributed, debug) -> None:
    """Train the reference experiment and write a complete, fingerprinted checkpoint.

    SIGTERM: finish the update, write a checkpoint, stop (exit 0). SIGUSR1: write one and carry on.
    """
    if resume_flat is not None and (protocol.resume is not None or protocol.resume_auto):
        raise click.UsageError("give --resume or --resume-flat, not both")
    with kit.distributed.session("train.py", debug, distributed) as world:  # under torchrun: the gloo group
        if resume_flat is not None and world is not None:
            raise kit.ResumeproofError("--resume-flat: a flat file resumes one process, not a torchrun group")
        changes = pivot.parse(pivots)
        opts = Options(resume_flat=resume_flat, accept_foreign=override_identity, pivot=changes,
                       distributed=distributed)  # fmt: skip
        exp = Experiment(seed=seed, hidden=hidden)
        run(replace(exp, lr=changes["lr"]) if "lr" in changes else exp, protocol, opts, world)


if __name__ == "__main__":
    main()
