"""The `resumeproof` command: verify, chaos, flat. The only place that turns outcomes into exit codes.

    resumeproof verify --output runs/proof [--train-cmd "python -B my_train.py"]
    resumeproof chaos --output runs/chaos --kills 20
    resumeproof flat export runs/a/checkpoint.pt runs/a/flat.bin

Exit codes: 0 passed, 1 a comparison failed, 2 could not complete (one line, `--debug` for the
traceback). This module and everything the verify and chaos commands import never import torch;
`flat export` imports it, late.
"""

import math
import os
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from resumeproof.common.errors import EXIT_ERROR, EXIT_FAILED, EXIT_PASSED, ResumeproofError, exit_on_error, one_line
from resumeproof.verify import settings as options
from resumeproof.verify.points import EPOCHS
from resumeproof.verify.settings import DEFAULT_POINT, FAULT_PARTS, Allowances, Settings, SettingsError

HERE = Path(__file__).resolve().parent.parent
DEFAULT_TRAIN_CMD = shlex.join([sys.executable, "-B", str(HERE / "train.py")])
CONTEXT = {"help_option_names": ["-h", "--help"]}


def _debug_option(command: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--debug", is_flag=True, help="Show tracebacks instead of one-line errors.")(command)


def _prog() -> str:
    """The command as the user typed it (`verify_resume.py`, `resumeproof verify`, ...), for error lines."""
    return click.get_current_context().command_path


def _parsed(parse: Callable[[], Any]) -> Any:
    """An option parser's SettingsError as click's usage error (exit 2, naming the option)."""
    try:
        return parse()
    except SettingsError as err:
        raise click.BadParameter(err.message, param_hint=err.flag) from None


@click.group(context_settings=CONTEXT)
def main() -> None:
    """Prove that a PyTorch training command resumes exactly (docs/protocol.md)."""


@main.command(context_settings=CONTEXT)
@click.option("--output", type=click.Path(path_type=Path), required=True, help="Directory for this verification.")
@click.option("--steps", type=click.IntRange(min=2), default=10, show_default=True, help="N: continuous updates.")
@click.option(
    "--interrupt-at", default=str(DEFAULT_POINT), show_default=True,
    help="k, k1,k2,..., 'all', or 'epochs' (every epoch boundary and mid-epoch point, read off the continuous run).",
)  # fmt: skip
@click.option("--atol", type=float, default=1e-12, show_default=True, help="Absolute tolerance; no relative one.")
@click.option(
    "--train-cmd", default=DEFAULT_TRAIN_CMD, help="Training command (docs/protocol.md).  [default: train.py]"
)
@click.option(
    "--resume-cmd", metavar="CMD",
    help="Command of every resuming process (e.g. torchrun at another world size).  [default: --train-cmd]",
)  # fmt: skip
@click.option("--jobs", type=click.IntRange(min=1), default=os.cpu_count() or 1, show_default="cores", help="At once.")
@click.option(
    "--timeout", type=click.FloatRange(min=0, min_open=True), default=600.0, show_default=True,
    help="Seconds a trajectory may run before it is killed.",
)  # fmt: skip
@click.option(
    "--faults", metavar="all|PART[,PART...]",
    help=f"Also resume once per omitted part, each must be caught: {', '.join(FAULT_PARTS)}; or flat.",
)  # fmt: skip
@click.option("--segments", multiple=True, metavar="N1,N2,...", help="Also run a chain of processes (repeatable).")
@click.option(
    "--check-cadence", is_flag=True,
    help="Also run continuous with --checkpoint-every 1: writing a checkpoint every step must change nothing.",
)  # fmt: skip
@click.option("--plot", is_flag=True, help="Write DIR/verification.png (needs the 'plot' extra: matplotlib).")
@click.option(
    "--allow-unsafe-pickle", multiple=True, metavar="GLOB",
    help="Accept checkpoint files matching GLOB that are pickles able to run code (recorded; repeatable).",
)  # fmt: skip
@click.option(
    "--allow-opaque", multiple=True, metavar="GLOB",
    help="Accept checkpoint files matching GLOB whose kind cannot be told (recorded; repeatable).",
)  # fmt: skip
@click.option("--torch-load", is_flag=True, help="Also load each checkpoint with torch.load (imports torch).")
@click.option(
    "--junit-xml", type=click.Path(path_type=Path), metavar="FILE",
    help="Also write JUnit XML: a testcase per trajectory and per check (for CI test views).",
)  # fmt: skip
@click.option(
    "--summary-md", type=click.Path(path_type=Path), metavar="FILE",
    help="Also write a short Markdown verdict (e.g. $GITHUB_STEP_SUMMARY).",
)  # fmt: skip
@_debug_option
def verify(
    output, steps, interrupt_at, atol, train_cmd, resume_cmd, jobs, timeout, faults, segments, check_cadence, plot,
    allow_unsafe_pickle, allow_opaque, torch_load, junit_xml, summary_md, debug,
) -> None:  # fmt: skip
    """Verify that TRAIN_CMD resumes as if it had never stopped."""
    from resumeproof.verify import plot as plot_module
    from resumeproof.verify import report
    from resumeproof.verify.verification import verify as run_verification

    if not (math.isfinite(atol) and atol >= 0):
        raise click.BadParameter(f"{atol} must be a finite number >= 0", param_hint="--atol")
    if plot and not plot_module.available():
        raise click.UsageError(f"--plot needs matplotlib, the 'plot' extra: {plot_module.INSTALL}")
    settings = Settings(
        output=output, steps=steps, points=_parsed(lambda: options.parse_points(interrupt_at, steps)), atol=atol,
        train_cmd=_parsed(lambda: options.parse_train_cmd(train_cmd)), jobs=jobs, timeout=timeout,
        torch_load=torch_load, faults=_parsed(lambda: options.parse_faults(faults)),
        segments=_parsed(lambda: options.parse_segments(segments, steps)), infer_points=interrupt_at == EPOCHS,
        cadence=1 if check_cadence else 0, plot=plot,
        allow=Allowances(unsafe_pickle=tuple(allow_unsafe_pickle), opaque=tuple(allow_opaque)),
        resume_cmd=_parsed(lambda: options.parse_train_cmd(resume_cmd, "--resume-cmd")) if resume_cmd else None,
    )  # fmt: skip
    out = report.console()
    with exit_on_error(_prog(), debug):
        try:
            document = run_verification(settings, out)
        except ResumeproofError as err:  # nothing was run: the CI reports still say why
            _ci_reports(junit_xml, summary_md, {"error": one_line(err), "train_cmd": train_cmd}, output)
            raise
        _ci_reports(junit_xml, summary_md, document, output)
    report.print_report(out, document)
    sys.exit(EXIT_ERROR if document["error"] else EXIT_PASSED if document["all_checks_passed"] else EXIT_FAILED)


def _ci_reports(junit_xml: Path | None, summary_md: Path | None, document: dict[str, Any], output: Path) -> None:
    if junit_xml is not None:
        from resumeproof.verify import junit

        junit.write(junit_xml, document, output / "verification.json")
    if summary_md is not None:
        from resumeproof.verify import markdown

        markdown.write(summary_md, document, output / "verification.json")


@main.command(context_settings=CONTEXT)
@click.option("--output", type=click.Path(path_type=Path), required=True, help="Directory for this test.")
@click.option("--kills", type=click.IntRange(min=1), default=20, show_default=True, help="Signals to deliver.")
@click.option("--steps", type=click.IntRange(min=2), default=30, show_default=True, help="The final global step.")
@click.option("--checkpoint-every", type=click.IntRange(min=1), default=1, show_default=True, help="Cadence.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the instants and signals.")
@click.option("--pace", type=click.FloatRange(min=0.001), default=0.05, show_default=True, help="Sleep per step.")
@click.option("--timeout", type=click.FloatRange(min=1), default=120.0, show_default=True, help="Seconds per process.")
@click.option(
    "--train-cmd", default=DEFAULT_TRAIN_CMD,
    help="Training command supporting --resume auto --until-step --checkpoint-every --pace.  [default: train.py]",
)  # fmt: skip
@click.option(
    "--kill", type=click.Choice(("process", "rank")), default="process", show_default=True,
    help="process: signal the trainer; rank: SIGKILL one worker of a torchrun --max-restarts launch.",
)  # fmt: skip
@_debug_option
def chaos(output, kills, steps, checkpoint_every, seed, pace, timeout, train_cmd, kill, debug) -> None:
    """Kill, stop and snapshot a long run at random instants; it must lose nothing."""
    from resumeproof.verify import chaos as supervisor
    from resumeproof.verify import report

    settings = supervisor.Settings(
        output=output, train=shlex.split(_parsed(lambda: options.parse_train_cmd(train_cmd))), kills=kills,
        steps=steps, checkpoint_every=checkpoint_every, seed=seed, pace=pace, timeout=timeout, kill=kill,
    )  # fmt: skip
    out = report.console()
    with exit_on_error(_prog(), debug), out.status(f"chaos: {kills} signals into a run of {steps} steps"):
        document = supervisor.run(settings)
    report.write(output / "verification.json", document)
    report.print_chaos(out, document)
    sys.exit(EXIT_PASSED if document["all_checks_passed"] else EXIT_FAILED)


@main.group(context_settings=CONTEXT)
def flat() -> None:
    """The classic flat file of weights and Adam moments: export one from a checkpoint, or inspect one."""


@flat.command(context_settings=CONTEXT)
@click.argument("checkpoint", type=click.Path(path_type=Path))
@click.argument("out", type=click.Path(path_type=Path))
@_debug_option
def export(checkpoint: Path, out: Path, debug: bool) -> None:
    """Write OUT (and OUT.sha256) from CHECKPOINT (imports torch)."""
    from resumeproof.common.flatfile import size
    from resumeproof.kit import flat as flatfile

    with exit_on_error(_prog(), debug):
        written = flatfile.export(checkpoint, out)
    n = len(written.weights)
    click.echo(f"{out}: step {written.step}, {n} parameters, {size(n)} bytes")


@flat.command(context_settings=CONTEXT)
@click.argument("path", type=click.Path(path_type=Path))
@_debug_option
def inspect(path: Path, debug: bool) -> None:
    """Print the header and sizes of a flat file, and check its length."""
    from resumeproof.common import flatfile  # torch-free: inspecting needs neither torch nor the kit

    with exit_on_error(_prog(), debug):
        lines = flatfile.describe(path)
    click.echo("\n".join(lines))


def verify_resume() -> None:
    """`python -B verify_resume.py [chaos] ...`: the verify and chaos commands under the script's name."""
    if sys.argv[1:2] == ["chaos"]:
        chaos(sys.argv[2:], prog_name="verify_resume.py chaos")
    else:
        verify(sys.argv[1:], prog_name="verify_resume.py")
