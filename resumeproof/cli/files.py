"""`resumeproof check` and `resumeproof flat`: checkpoint files judged without loading them, and the classic flat
file of weights and Adam moments."""

from pathlib import Path

import click

from resumeproof.cli.common import CONTEXT, Command, debug_option
from resumeproof.common import codec
from resumeproof.common.errors import EXIT_ERROR, EXIT_FAILED, EXIT_PASSED
from resumeproof.verify.settings import Allowances


@click.command(name="check", cls=Command, context_settings=CONTEXT)
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path), metavar="PATH...")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document instead of one line per path.")
@click.option(
    "--allow-unsafe-pickle",
    multiple=True,
    metavar="GLOB",
    help="In a directory, accept files matching GLOB that are pickles able to run code (repeatable).",
)
@click.option(
    "--allow-opaque",
    multiple=True,
    metavar="GLOB",
    help="In a directory, accept files matching GLOB whose kind cannot be told (repeatable).",
)
@debug_option
def run_check(paths: tuple[Path, ...], as_json: bool, allow_unsafe_pickle, allow_opaque, debug: bool) -> int:
    """Check checkpoints load under weights_only, without torch and without running them.

    Each PATH is a file, a DCP directory or a framework's checkpoint directory; it passes when
    torch.load(weights_only=True) would load it. Exit 0: every one would; 1: one is refused; 2: one
    is missing or unreadable."""
    import json

    from resumeproof.verify.run.vet import Verdict, vet

    allow = Allowances(unsafe_pickle=tuple(allow_unsafe_pickle), opaque=tuple(allow_opaque))
    found = [vet(path, allow) for path in paths]
    if as_json:
        document = {
            "accepted": all(v.verdict is Verdict.ACCEPTED for v in found),
            "paths": codec.encode(found),
        }
        click.echo(json.dumps(document, indent=1))
    else:
        for v in found:
            click.echo(v.line(), err=v.verdict is not Verdict.ACCEPTED)
    verdicts = {v.verdict for v in found}
    return EXIT_ERROR if Verdict.UNREADABLE in verdicts else EXIT_FAILED if Verdict.REFUSED in verdicts else EXIT_PASSED


@click.group(context_settings=CONTEXT)
def flat() -> None:
    """The classic flat file of weights and Adam moments: export one from a checkpoint, or inspect one."""


@flat.command(name="export", cls=Command, context_settings=CONTEXT)
@click.argument("checkpoint", type=click.Path(path_type=Path))
@click.argument("out", type=click.Path(path_type=Path))
@debug_option
def flat_export(checkpoint: Path, out: Path, debug: bool) -> int:
    """Write OUT (and OUT.sha256) from CHECKPOINT (imports torch)."""
    from resumeproof.common.flatfile import size
    from resumeproof.kit.flat import export

    written = export(checkpoint, out)
    n = len(written.weights)
    click.echo(f"{out}: step {written.step}, {n} parameters, {size(n)} bytes")
    return EXIT_PASSED


@flat.command(name="inspect", cls=Command, context_settings=CONTEXT)
@click.argument("path", type=click.Path(path_type=Path))
@debug_option
def flat_inspect(path: Path, debug: bool) -> int:
    """Print the header and sizes of a flat file, and check its length."""
    from resumeproof.common.flatfile import describe  # torch-free: inspecting needs neither torch nor the kit

    click.echo("\n".join(describe(path)))
    return EXIT_PASSED
