"""Prove that a training command resumes exactly: four fresh processes, compared at atol 1e-12.

    python -B verify_resume.py --output runs/proof
    python -B verify_resume.py --output runs/mine --train-cmd "python -B my_train.py --config small.toml"

continuous (N updates) and interrupted (k updates) run side by side; then a full resume and a
resume without RNG restore (the negative control) continue the interrupted checkpoint to N.
The full resume must match the continuous run and the negative control must not
(docs/protocol.md). Writes DIR/verification.json; exit 0 passed, 1 a comparison failed,
2 verification could not be completed.
"""

import math
import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
from rich.live import Live

from resumeproof import fingerprint, plaindata, protocol, report
from resumeproof.compare import compare, compare_keys, merge
from resumeproof.trajectories import SKIPPED, Trajectory, TrajectoryError, run_all

HERE = Path(__file__).resolve().parent
DEFAULT_TRAIN_CMD = shlex.join([sys.executable, "-B", str(HERE / "train.py")])
CONTINUOUS, INTERRUPTED, RESUMED, RESUMED_NO_RNG = "continuous", "interrupted", "resumed", "resumed-no-rng"


class VerificationError(Exception):
    """Verification could not be completed (exit 2)."""


@dataclass(frozen=True, kw_only=True)
class Settings:
    output: Path  # run directory of this verification; must not exist
    steps: int  # N: updates of the continuous run
    interrupt_at: int  # k: updates before the interruption
    atol: float  # absolute tolerance, no relative one
    train_cmd: str  # command line the protocol flags are appended to
    jobs: int  # processes at once
    timeout: float  # seconds per trajectory before it is killed
    torch_load: bool  # also load every checkpoint with torch.load(weights_only=True)


def plan(s: Settings) -> list[Trajectory]:
    base = shlex.split(s.train_cmd)
    resume = ["--resume", str(s.output / INTERRUPTED / protocol.CHECKPOINT)]
    spec = [
        (CONTINUOUS, s.steps, [], ()),
        (INTERRUPTED, s.interrupt_at, [], ()),
        (RESUMED, s.steps - s.interrupt_at, resume, (INTERRUPTED,)),
        (RESUMED_NO_RNG, s.steps - s.interrupt_at, [*resume, "--omit-rng-restore"], (INTERRUPTED,)),
    ]
    return [
        Trajectory(
            name=name,
            argv=[*base, "--steps", str(steps), "--output", str(s.output / name), *extra],
            output=s.output / name,
            log=s.output / "logs" / f"{name}.log",
            after=after,
        )
        for name, steps, extra, after in spec
    ]


def accepter(s: Settings):
    """Check what a finished trajectory wrote before anything uses or compares it."""
    expected_step = {CONTINUOUS: s.steps, INTERRUPTED: s.interrupt_at}

    def accept(t: Trajectory) -> None:
        path = t.output / protocol.CHECKPOINT
        try:
            if not path.is_file():
                raise TrajectoryError(f"{path}: missing")
            t.results["sha256"] = fingerprint.verify(path)
            t.results["tensors"] = plaindata.check(path)
            step = expected_step.get(t.name, s.steps)
            t.results["summary"] = protocol.read_summary(t.output / protocol.SUMMARY, step)
        except (fingerprint.FingerprintError, plaindata.PlainDataError, protocol.ProtocolError) as err:
            raise TrajectoryError(str(err)) from None

    return accept


def evaluate(s: Settings, trajectories: list[Trajectory]) -> dict[str, Any]:
    """PROTOCOL.md section 5, from the accepted summaries."""
    summary = {t.name: t.results["summary"] for t in trajectories}
    cont, k = summary[CONTINUOUS], s.interrupt_at
    prefix = compare(summary[INTERRUPTED]["history"], cont["history"][:k], s.atol, "history")
    full_parts = compare_keys(cont, summary[RESUMED], protocol.COMPARED_KEYS, s.atol)
    no_rng_parts = compare_keys(cont, summary[RESUMED_NO_RNG], protocol.COMPARED_KEYS, s.atol)
    full, no_rng = merge(full_parts.values()), merge(no_rng_parts.values())
    checks = [report.check(f"fingerprint+weights_only:{t.name}", True, detail=_loaded(t)) for t in trajectories]
    checks += [
        report.check("interrupted history = first k records of continuous", prefix.concordant, prefix),
        report.check("full resume concordant with continuous", full.concordant, full),
        report.check("resume without RNG restore diverges (negative control)", not no_rng.concordant, no_rng),
    ]
    return {
        "all_checks_passed": all(c["passed"] for c in checks),
        "positive": full.concordant,
        "negative_divergence_detected": not no_rng.concordant,
        "checks": checks,
        "comparison": {
            "full_resume": report.resume_entry(cont, summary[RESUMED], full, full_parts["state"]),
            "no_rng_resume": report.resume_entry(cont, summary[RESUMED_NO_RNG], no_rng, no_rng_parts["state"]),
        },
        "next_lr": cont["next"]["lr"],
    }


def _loaded(t: Trajectory) -> str:
    how = "torch.load(weights_only=True)" if t.results.get("torch_loaded") else "torch-free weights_only unpickler"
    return f"sha256 matches; {t.results['tensors']} tensors, plain data ({how})"


def verify(s: Settings, out) -> dict[str, Any]:
    """Run the four trajectories and compare them; the verification.json document."""
    if s.output.exists() or s.output.is_symlink():
        raise VerificationError(f"--output {s.output}: already exists; refusing to touch it")
    (s.output / "logs").mkdir(parents=True)
    trajectories = plan(s)
    with Live(report.progress_table(trajectories), console=out, refresh_per_second=8) as live:
        run_all(trajectories, s.jobs, s.timeout, accepter(s), lambda: live.update(report.progress_table(trajectories)))
    if not out.is_terminal:
        out.line()  # Live ends its last line only on a terminal
    error = next((t.error for t in trajectories if t.error and t.status != SKIPPED), None)
    if error is None:
        error = _resume_input_unchanged(trajectories) or (_torch_load_all(trajectories) if s.torch_load else None)
    meta = next(t for t in trajectories if t.name == CONTINUOUS).results.get("summary", {}).get("meta")
    document: dict[str, Any] = {
        "all_checks_passed": False,
        "positive": False,
        "negative_divergence_detected": False,
        "error": error,
        "protocol": protocol.PROTOCOL,
        "train_cmd": s.train_cmd,
        "steps": s.steps,
        "interrupt_at": s.interrupt_at,
        "tolerance": {"atol": s.atol, "rtol": 0.0},
        "environment": report.environment(meta if isinstance(meta, dict) else {}),  # meta: any JSON
        "trajectories": {t.name: report.trajectory_entry(t) for t in trajectories},
        "checks": [],
        "comparison": {},
        "next_lr": None,
    }
    if error is None:
        document.update(evaluate(s, trajectories))
    report.write(s.output / "verification.json", document)
    return document


def _resume_input_unchanged(trajectories: list[Trajectory]) -> str | None:
    """A resume must read its checkpoint, never write it: re-hash it once both resumes are done."""
    interrupted = next(t for t in trajectories if t.name == INTERRUPTED)
    path = interrupted.output / protocol.CHECKPOINT
    if fingerprint.sha256_file(path) != interrupted.results["sha256"]:
        return f"{path}: changed while it was being resumed from"
    return None


def _torch_load_all(trajectories: list[Trajectory]) -> str | None:
    """Load every checkpoint with torch itself; the first refusal, if any."""
    for t in trajectories:
        try:
            plaindata.check_with_torch(t.output / protocol.CHECKPOINT)
        except plaindata.PlainDataError as err:
            t.error = f"{t.name}: {err}"
            return t.error
        t.results["torch_loaded"] = True
    return None


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--output", type=click.Path(path_type=Path), required=True, help="Directory for this verification; must not exist."
)
@click.option(
    "--steps", type=click.IntRange(min=2), default=10, show_default=True, help="N: updates of the continuous run."
)
@click.option(
    "--interrupt-at",
    type=click.IntRange(min=1),
    default=5,
    show_default=True,
    help="k: updates before the interruption (1 <= k < N).",
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
    "--torch-load",
    is_flag=True,
    help="Also load each checkpoint with torch.load(weights_only=True) (imports torch: about 1.3 s more).",
)
@click.option("--debug", is_flag=True, help="Show tracebacks.")
def main(output, steps, interrupt_at, atol, train_cmd, jobs, timeout, torch_load, debug) -> None:  # fmt: skip
    """Verify that TRAIN_CMD resumes as if it had never stopped."""
    if interrupt_at >= steps:
        raise click.BadParameter(f"{interrupt_at} must be below --steps {steps}", param_hint="--interrupt-at")
    if not (math.isfinite(atol) and atol >= 0):
        raise click.BadParameter(f"{atol} must be a finite number >= 0", param_hint="--atol")
    try:
        if not shlex.split(train_cmd):
            raise click.BadParameter("is empty", param_hint="--train-cmd")
    except ValueError as err:
        raise click.BadParameter(f"{train_cmd!r}: {err}", param_hint="--train-cmd") from None
    settings = Settings(
        output=output, steps=steps, interrupt_at=interrupt_at, atol=atol,
        train_cmd=train_cmd, jobs=jobs, timeout=timeout, torch_load=torch_load,
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


if __name__ == "__main__":
    main()
