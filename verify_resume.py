"""Prove that a training command resumes exactly: fresh processes, compared at atol 1e-12.

    python -B verify_resume.py --output runs/proof
    python -B verify_resume.py --output runs/mine --train-cmd "python -B my_train.py --config small.toml"
    python -B verify_resume.py --output runs/sweep --interrupt-at all --faults all --segments 3,3,4 --plot

continuous (N updates) and interrupted (k updates) run side by side; then a full resume and a
resume without RNG restore (the negative control) continue the interrupted checkpoint to N.
The full resume must match the continuous run and the negative control must not
(docs/protocol.md). More interruption points, chains of segments and deliberate faults (one
omitted part each, every one of which must be caught) extend the same proof. Writes
DIR/verification.json; exit 0 passed, 1 a comparison failed, 2 verification could not be completed.
"""

import math
import os
import shlex
import sys
from pathlib import Path
from typing import Any

import click
from rich.live import Live

from resumeproof.common import fingerprint, protocol
from resumeproof.verify import chaos, plan, report
from resumeproof.verify import plot as plot_module
from resumeproof.verify import weights_only as plaindata
from resumeproof.verify.plan import CADENCE, CONTINUOUS, FAULT_PARTS, FLAT, FLAT_EXPORT, Plan, Settings
from resumeproof.verify.trajectories import SKIPPED, Trajectory, TrajectoryError, run_all

HERE = Path(__file__).resolve().parent
DEFAULT_TRAIN_CMD = shlex.join([sys.executable, "-B", str(HERE / "train.py")])
DEFAULT_POINT = 5


class VerificationError(Exception):
    """Verification could not be completed (exit 2)."""


def accepter(s: Settings, p: Plan):
    """Check what a finished trajectory wrote before anything uses or compares it."""

    def accept(t: Trajectory) -> None:
        try:
            if t.name == FLAT_EXPORT:  # not a trajectory: the flat file the flat fault resumes from
                t.results["resumable"] = t.output / "flat.bin"
                t.results["sha256"] = fingerprint.verify(t.results["resumable"])
                return
            t.results["resumable"] = t.output / protocol.CHECKPOINT
            t.results["sha256"], t.results["tensors"] = _checkpoint(t.results["resumable"])
            t.results["summary"] = protocol.read_summary(t.output / protocol.SUMMARY, p.steps[t.name])
            if t.name == CADENCE:  # every generation it kept is valid, and the newest is the last step
                kept = sorted(t.output.glob("step_*.pt"))
                if not kept or kept[-1].name != f"step_{s.steps:06d}.pt":
                    raise TrajectoryError(f"{t.output}: no generation step_{s.steps:06d}.pt")
                for path in kept:
                    _checkpoint(path)
        except (fingerprint.FingerprintError, plaindata.WeightsOnlyError, protocol.ProtocolError) as err:
            raise TrajectoryError(str(err)) from None

    return accept


def _checkpoint(path: Path) -> tuple[str, int]:
    """Fingerprint, then the weights_only check; the sha256 and the number of tensors."""
    if not path.is_file():
        raise TrajectoryError(f"{path}: missing")
    return fingerprint.verify(path), plaindata.check(path).tensors


def verify(s: Settings, out) -> dict[str, Any]:
    """Run the planned trajectories and compare them; the verification.json document."""
    if s.output.exists() or s.output.is_symlink():
        raise VerificationError(f"--output {s.output}: already exists; refusing to touch it")
    (s.output / "logs").mkdir(parents=True)
    p = plan.build(s)
    with Live(report.progress(p.trajectories), console=out, refresh_per_second=8) as live:
        run_all(p.trajectories, s.jobs, s.timeout, accepter(s, p), lambda: live.update(report.progress(p.trajectories)))
    if not out.is_terminal:
        out.line()  # Live ends its last line only on a terminal
    error = next((t.error for t in p.trajectories if t.error and t.status != SKIPPED), None)
    if error is None:
        error = _inputs_unchanged(p.trajectories) or (_torch_load_all(p.trajectories) if s.torch_load else None)
    summaries = {t.name: t.results["summary"] for t in p.trajectories if "summary" in t.results}
    meta = summaries.get(CONTINUOUS, {}).get("meta")
    document: dict[str, Any] = {
        "all_checks_passed": False,
        "positive": False,
        "negative_divergence_detected": False,
        "error": error,
        "protocol": protocol.PROTOCOL,
        "train_cmd": s.train_cmd,
        "steps": s.steps,
        "interrupt_at": list(s.points),
        "segments": [list(chain) for chain in s.segments],
        "tolerance": {"atol": s.atol, "rtol": 0.0},
        "environment": report.environment(meta if isinstance(meta, dict) else {}),  # meta: any JSON
        "trajectories": {t.name: report.trajectory_entry(t) for t in p.trajectories},
        "checks": [],
        "comparison": {},
        "faults": {},
        "blind_to": [],
        "next_lr": None,
    }
    if error is None:
        document.update(plan.evaluate(s, p, summaries))
        checkpoints = [_checkpoint_check(t) for t in p.trajectories if "tensors" in t.results]
        document["checks"] = checkpoints + document["checks"]
        if s.plot:
            document["plot"] = str(plot_module.write(s.output / "verification.png", summaries, s.atol))
    report.write(s.output / "verification.json", document)
    return document


def _checkpoint_check(t: Trajectory) -> dict[str, Any]:
    how = "torch.load(weights_only=True)" if t.results.get("torch_loaded") else "torch-free weights_only unpickler"
    return {
        "name": f"checkpoint {t.name}: fingerprint and weights_only",
        "passed": True,  # a failure here stops verification (exit 2) before any comparison
        "max_abs_diff": None,
        "first_mismatch": None,
        "detail": f"sha256 matches; {t.results['tensors']} tensors, plain data ({how})",
    }


def _inputs_unchanged(trajectories: list[Trajectory]) -> str | None:
    """A resume must read its checkpoint, never write it: re-hash every one resumed from."""
    resumed_from = {name for t in trajectories for name in t.after}
    for t in trajectories:
        path = t.results.get("resumable")
        if t.name in resumed_from and path and fingerprint.sha256_file(path) != t.results["sha256"]:
            return f"{path}: changed while it was being resumed from"
    return None


def _torch_load_all(trajectories: list[Trajectory]) -> str | None:
    """Load every checkpoint with torch itself; the first refusal, if any."""
    for t in (t for t in trajectories if "tensors" in t.results):
        try:
            plaindata.check_with_torch(t.output / protocol.CHECKPOINT)
        except plaindata.WeightsOnlyError as err:
            t.error = f"{t.name}: {err}"
            return t.error
        t.results["torch_loaded"] = True
    return None


# -- command line -------------------------------------------------------------------------------


def parse_points(spec: str, steps: int) -> tuple[int, ...]:
    """'5', '1,4,6,9' or 'all' (every k from 1 to N-1); the primary point (the default 5 when it is
    among them, else the first given) goes first."""
    points = list(range(1, steps)) if spec == "all" else _ints(spec, "--interrupt-at")
    if not points or any(not 1 <= k < steps for k in points) or len(set(points)) != len(points):
        raise click.BadParameter(
            f"{spec!r}: distinct points k with 1 <= k < --steps {steps}", param_hint="--interrupt-at"
        )
    primary = DEFAULT_POINT if DEFAULT_POINT in points else points[0]
    return (primary, *(k for k in points if k != primary))


def parse_faults(spec: str | None) -> tuple[str, ...]:
    """'all' (every part of the fault matrix), a list of parts, and/or 'flat'."""
    if not spec:
        return ()
    items = [item.strip() for item in spec.split(",")]
    parts = [part for item in items for part in (FAULT_PARTS if item == "all" else (item,))]
    unknown = [part for part in parts if part not in (*FAULT_PARTS, FLAT)]
    if unknown:
        raise click.BadParameter(
            f"unknown part {', '.join(unknown)}; valid: all, {', '.join(FAULT_PARTS)}, {FLAT}", param_hint="--faults"
        )
    return tuple(dict.fromkeys(parts))


def parse_segments(specs: tuple[str, ...], steps: int) -> tuple[tuple[int, ...], ...]:
    chains = tuple(tuple(_ints(spec, "--segments")) for spec in specs)
    for spec, chain in zip(specs, chains, strict=True):
        if len(chain) < 2 or min(chain) < 1 or sum(chain) != steps:
            raise click.BadParameter(
                f"{spec!r}: at least two counts >= 1 that sum to --steps {steps}", param_hint="--segments"
            )
    return chains


def _ints(spec: str, flag: str) -> list[int]:
    try:
        return [int(item) for item in spec.split(",")]
    except ValueError:
        raise click.BadParameter(f"{spec!r} is not a comma-separated list of integers", param_hint=flag) from None


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--output", type=click.Path(path_type=Path), required=True, help="Directory for this verification; must not exist."
)
@click.option(
    "--steps", type=click.IntRange(min=2), default=10, show_default=True, help="N: updates of the continuous run."
)
@click.option(
    "--interrupt-at", default=str(DEFAULT_POINT), show_default=True, help="k, a list k1,k2,... or 'all' (1 <= k < N)."
)
@click.option(
    "--atol", type=float, default=1e-12, show_default=True, help="Absolute tolerance; there is no relative one."
)
@click.option(
    "--train-cmd",
    default=DEFAULT_TRAIN_CMD,
    help="Training command following docs/protocol.md.  [default: the bundled train.py]",
)
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    default=os.cpu_count() or 1,
    show_default="number of cores",
    help="Processes run at once.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=600.0,
    show_default=True,
    help="Seconds a trajectory may run before it is killed.",
)
@click.option(
    "--faults",
    metavar="all|PART[,PART...]",
    help=f"Also resume once per omitted part, each must be caught: {', '.join(FAULT_PARTS)}; or flat.",
)
@click.option(
    "--segments",
    multiple=True,
    metavar="N1,N2,...",
    help="Also run a chain of processes of N1, N2, ... updates (repeatable).",
)
@click.option("--plot", is_flag=True, help="Write DIR/verification.png (needs the 'plot' extra: matplotlib).")
@click.option(
    "--torch-load",
    is_flag=True,
    help="Also load each checkpoint with torch.load(weights_only=True) (imports torch: about 1.3 s more).",
)
@click.option("--debug", is_flag=True, help="Show tracebacks.")
def main(
    output, steps, interrupt_at, atol, train_cmd, jobs, timeout, faults, segments, plot, torch_load, debug
) -> None:  # fmt: skip
    """Verify that TRAIN_CMD resumes as if it had never stopped.

    `verify_resume.py chaos --help`: the chaos test of long runs (kills at random instants).
    """
    if not (math.isfinite(atol) and atol >= 0):
        raise click.BadParameter(f"{atol} must be a finite number >= 0", param_hint="--atol")
    try:
        if not shlex.split(train_cmd):
            raise click.BadParameter("is empty", param_hint="--train-cmd")
    except ValueError as err:
        raise click.BadParameter(f"{train_cmd!r}: {err}", param_hint="--train-cmd") from None
    if plot and not plot_module.available():
        raise click.UsageError(f"--plot needs matplotlib, the 'plot' extra: {plot_module.INSTALL}")
    settings = Settings(
        output=output, steps=steps, points=parse_points(interrupt_at, steps), atol=atol, train_cmd=train_cmd,
        jobs=jobs, timeout=timeout, torch_load=torch_load, faults=parse_faults(faults),
        segments=parse_segments(segments, steps), cadence=1 if interrupt_at == "all" else 0, plot=plot,
    )  # fmt: skip
    out = report.console()
    try:
        document = verify(settings, out)
    except VerificationError as err:
        if debug:
            raise
        out.print(f"[red]error:[/] {err}")
        sys.exit(2)
    report.print_report(out, document)
    sys.exit(2 if document["error"] else 0 if document["all_checks_passed"] else 1)


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--output", type=click.Path(path_type=Path), required=True, help="Directory for this test; must not exist."
)
@click.option("--kills", type=click.IntRange(min=1), default=20, show_default=True, help="Signals to deliver.")
@click.option("--steps", type=click.IntRange(min=2), default=30, show_default=True, help="The final global step.")
@click.option(
    "--checkpoint-every", type=click.IntRange(min=1), default=1, show_default=True, help="Generation cadence."
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the instants and signals.")
@click.option(
    "--pace", type=click.FloatRange(min=0.001), default=0.05, show_default=True, help="Trainer sleep per step."
)
@click.option("--timeout", type=click.FloatRange(min=1), default=120.0, show_default=True, help="Seconds per process.")
@click.option("--debug", is_flag=True, help="Show tracebacks.")
def chaos_main(output, kills, steps, checkpoint_every, seed, pace, timeout, debug) -> None:
    """Kill, stop and snapshot a long run at random instants; it must lose nothing (see resumeproof/chaos.py)."""
    settings = chaos.Settings(
        output=output, train=shlex.split(DEFAULT_TRAIN_CMD), kills=kills, steps=steps,
        checkpoint_every=checkpoint_every, seed=seed, pace=pace, timeout=timeout,
    )  # fmt: skip
    out = report.console()
    try:
        with out.status(f"chaos: {kills} signals into a run of {steps} steps"):
            document = chaos.run(settings)
    except chaos.ChaosError as err:
        if debug:
            raise
        out.print(f"[red]error:[/] {err}")
        sys.exit(2)
    report.write(output / "verification.json", document)
    report.print_chaos(out, document)
    sys.exit(0 if document["all_checks_passed"] else 1)


if __name__ == "__main__":
    if sys.argv[1:2] == ["chaos"]:
        chaos_main(sys.argv[2:], prog_name="verify_resume.py chaos")
    else:
        main()
