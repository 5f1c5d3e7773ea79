"""The `resumeproof` command: verify, chaos, check, flat. The only place that turns outcomes into exit codes.

    resumeproof verify --output runs/proof [--train-cmd "python -B my_train.py"]
    resumeproof chaos --output runs/chaos --kills 20
    resumeproof check received/checkpoint.pt [--json]
    resumeproof flat export runs/a/checkpoint.pt runs/a/flat.bin

Exit codes: 0 passed, 1 a comparison failed, 2 could not complete (one line, `--debug` for the
traceback). This module and everything the verify, chaos and check commands import never import torch;
`flat export` and `verify --torch-load` import it, late.
"""

import os
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from resumeproof.common import protocol
from resumeproof.common.errors import EXIT_ERROR, EXIT_FAILED, EXIT_PASSED, ResumeproofError, exit_on_error, one_line
from resumeproof.verify import settings
from resumeproof.verify.points import EPOCHS
from resumeproof.verify.result import Verification
from resumeproof.verify.settings import DEFAULT_POINT, Allowances, Settings, SettingsError

DEFAULT_TRAIN_CMD = shlex.join([sys.executable, "-B", "-m", "resumeproof.reference"])  # the packaged reference trainer
CONTEXT = {"help_option_names": ["-h", "--help"]}
LONG_RUN = (
    protocol.RESUME_FLAG,
    protocol.AUTO,
    protocol.UNTIL_STEP_FLAG,
    protocol.CHECKPOINT_EVERY_FLAG,
    protocol.PACE_FLAG,
)
LONG_RUN_FLAGS = " ".join(LONG_RUN)  # what a trainer under chaos accepts


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
@click.version_option(package_name="resumeproof", prog_name="resumeproof", message="%(prog)s %(version)s")
def main() -> None:
    """Prove that a PyTorch training command resumes exactly (docs/protocol.md)."""


@main.command(name="verify", context_settings=CONTEXT)
@click.option("--output", type=click.Path(path_type=Path), required=True, help="Directory for this verification.")
@click.option("--steps", type=click.IntRange(min=2), default=10, show_default=True, help="N: continuous updates.")
@click.option(
    "--interrupt-at", default=str(DEFAULT_POINT), show_default=True,
    help="k, k1,k2,..., 'all', or 'epochs' (every epoch boundary and mid-epoch point, read off the continuous run).",
)  # fmt: skip
@click.option("--atol", type=float, default=1e-12, show_default=True, help="Absolute tolerance; no relative one.")
@click.option(
    "--train-cmd",
    default=DEFAULT_TRAIN_CMD,
    help="Training command (docs/protocol.md).  [default: the bundled reference trainer]",
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
    help="Also resume once per omitted part, each must be caught: all (the parts the trainer declares in meta.parts, "
    f"else {', '.join(protocol.STANDARD_PARTS)}), a list of parts, or flat.",
)  # fmt: skip
@click.option("--segments", multiple=True, metavar="N1,N2,...", help="Also run a chain of processes (repeatable).")
@click.option(
    "--check-cadence",
    is_flag=True,
    help=f"Also run continuous with {protocol.CHECKPOINT_EVERY_FLAG} 1: writing a checkpoint every step must change "
    "nothing.",
)
@click.option(
    "--repeat", is_flag=True,
    help="Always repeat the continuous run (it is repeated anyway when a comparison fails); a difference is exit 1.",
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
def run_verify(
    output, steps, interrupt_at, atol, train_cmd, resume_cmd, jobs, timeout, faults, segments, check_cadence, repeat,
    plot, allow_unsafe_pickle, allow_opaque, torch_load, junit_xml, summary_md, debug,
) -> None:  # fmt: skip
    """Verify that TRAIN_CMD resumes as if it had never stopped."""
    from resumeproof.verify import terminal
    from resumeproof.verify.plot import INSTALL, available
    from resumeproof.verify.verification import verify

    asked = _parsed(
        lambda: Settings(
            output=output,
            steps=steps,
            points=settings.parse_points(interrupt_at, steps),
            atol=atol,
            train_cmd=settings.parse_train_cmd(train_cmd),
            jobs=jobs,
            timeout=timeout,
            torch_load=torch_load,
            faults=settings.parse_faults(faults),
            segments=settings.parse_segments(segments, steps),
            infer_points=interrupt_at == EPOCHS,
            cadence=1 if check_cadence else 0,
            plot=plot,
            allow=Allowances(unsafe_pickle=tuple(allow_unsafe_pickle), opaque=tuple(allow_opaque)),
            resume_cmd=settings.parse_train_cmd(resume_cmd, "--resume-cmd") if resume_cmd else None,
            repeat=repeat,
        )
    )
    if plot and not available():
        raise click.UsageError(f"--plot needs matplotlib, the 'plot' extra: {INSTALL}")
    out = terminal.console()
    with exit_on_error(_prog(), debug):
        try:
            result = verify(asked, out)
        except ResumeproofError as err:  # nothing was run: the CI reports still say why
            _ci_reports(junit_xml, summary_md, Verification(error=one_line(err), train_cmd=train_cmd), output)
            raise
        _ci_reports(junit_xml, summary_md, result, output)
    terminal.print_report(out, result)
    sys.exit(EXIT_ERROR if result.error else EXIT_PASSED if result.all_checks_passed else EXIT_FAILED)


def _ci_reports(junit_xml: Path | None, summary_md: Path | None, result: "Verification", output: Path) -> None:
    if junit_xml is not None:
        from resumeproof.verify import junit

        junit.write(junit_xml, result, output / "verification.json")
    if summary_md is not None:
        from resumeproof.verify import markdown

        markdown.write(summary_md, result, output / "verification.json")


@main.command(name="chaos", context_settings=CONTEXT)
@click.option("--output", type=click.Path(path_type=Path), required=True, help="Directory for this test.")
@click.option("--kills", type=click.IntRange(min=1), default=20, show_default=True, help="Signals to deliver.")
@click.option("--steps", type=click.IntRange(min=2), default=30, show_default=True, help="The final global step.")
@click.option(
    "--checkpoint-every",
    type=int,
    default=1,
    show_default=True,
    help="Steps between generations (at least 1: signals are aimed inside their writes).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the instants and signals.")
@click.option(
    "--pace", type=click.FloatRange(min=settings.MIN_PACE), default=0.05, show_default=True, help="Sleep per step."
)
@click.option("--timeout", type=click.FloatRange(min=1), default=120.0, show_default=True, help="Seconds per process.")
@click.option(
    "--train-cmd",
    default=DEFAULT_TRAIN_CMD,
    help=f"Training command supporting {LONG_RUN_FLAGS}.  [default: the reference]",
)
@click.option(
    "--kill",
    type=click.Choice((settings.PROCESS, settings.RANK)),
    default=settings.PROCESS,
    show_default=True,
    help="process: signal the trainer; rank: SIGKILL one worker of a torchrun --max-restarts launch.",
)
@_debug_option
def run_chaos(train_cmd: str, debug: bool, **options: Any) -> None:
    """Kill, stop and snapshot a long run at random instants; it must lose nothing."""
    from resumeproof.verify import chaos, terminal

    # every other option is a field of settings.ChaosSettings, under its own name
    asked = _parsed(lambda: settings.ChaosSettings(train=shlex.split(settings.parse_train_cmd(train_cmd)), **options))
    out = terminal.console()
    with exit_on_error(_prog(), debug), out.status(f"chaos: {asked.kills} signals into a run of {asked.steps} steps"):
        result = chaos.run(asked)
    result.write(asked.output / "verification.json")
    terminal.print_chaos(out, result)
    sys.exit(EXIT_PASSED if result.all_checks_passed else EXIT_FAILED)


@main.command(name="check", context_settings=CONTEXT)
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path), metavar="PATH...")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document instead of one line per path.")
@click.option(
    "--allow-unsafe-pickle", multiple=True, metavar="GLOB",
    help="In a directory, accept files matching GLOB that are pickles able to run code (repeatable).",
)  # fmt: skip
@click.option(
    "--allow-opaque", multiple=True, metavar="GLOB",
    help="In a directory, accept files matching GLOB whose kind cannot be told (repeatable).",
)  # fmt: skip
@_debug_option
def run_check(paths: tuple[Path, ...], as_json: bool, allow_unsafe_pickle, allow_opaque, debug: bool) -> None:
    """Check checkpoints load under weights_only, without torch and without running them.

    Each PATH is a file, a DCP directory or a framework's checkpoint directory; it passes when
    torch.load(weights_only=True) would load it. Exit 0: every one would; 1: one is refused; 2: one
    is missing or unreadable."""
    import json

    from resumeproof.verify.vet import Verdict, vet

    allow = Allowances(unsafe_pickle=tuple(allow_unsafe_pickle), opaque=tuple(allow_opaque))
    with exit_on_error(_prog(), debug):
        found = [vet(path, allow) for path in paths]
    if as_json:
        document = {
            "accepted": all(v.verdict is Verdict.ACCEPTED for v in found),
            "paths": [v.to_json() for v in found],
        }
        click.echo(json.dumps(document, indent=1))
    else:
        for v in found:
            click.echo(v.line(), err=v.verdict is not Verdict.ACCEPTED)
    verdicts = {v.verdict for v in found}
    sys.exit(
        EXIT_ERROR if Verdict.UNREADABLE in verdicts else EXIT_FAILED if Verdict.REFUSED in verdicts else EXIT_PASSED
    )


@main.group(context_settings=CONTEXT)
def flat() -> None:
    """The classic flat file of weights and Adam moments: export one from a checkpoint, or inspect one."""


@flat.command(name="export", context_settings=CONTEXT)
@click.argument("checkpoint", type=click.Path(path_type=Path))
@click.argument("out", type=click.Path(path_type=Path))
@_debug_option
def flat_export(checkpoint: Path, out: Path, debug: bool) -> None:
    """Write OUT (and OUT.sha256) from CHECKPOINT (imports torch)."""
    from resumeproof.common.flatfile import size
    from resumeproof.kit.flat import export

    with exit_on_error(_prog(), debug):
        written = export(checkpoint, out)
    n = len(written.weights)
    click.echo(f"{out}: step {written.step}, {n} parameters, {size(n)} bytes")


@flat.command(name="inspect", context_settings=CONTEXT)
@click.argument("path", type=click.Path(path_type=Path))
@_debug_option
def flat_inspect(path: Path, debug: bool) -> None:
    """Print the header and sizes of a flat file, and check its length."""
    from resumeproof.common.flatfile import describe  # torch-free: inspecting needs neither torch nor the kit

    with exit_on_error(_prog(), debug):
        lines = describe(path)
    click.echo("\n".join(lines))


def verify_resume() -> None:
    """`python -B verify_resume.py [chaos] ...`: the verify and chaos commands under the script's name."""
    if sys.argv[1:2] == ["chaos"]:
        run_chaos(sys.argv[2:], prog_name="verify_resume.py chaos")
    else:
        run_verify(sys.argv[1:], prog_name="verify_resume.py")
