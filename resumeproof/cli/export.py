"""`resumeproof export RUN DEST`: a run's resume points copied to DEST, read back, checked and resumed from; exit 0
proven, 1 a check failed (the earlier export stays current), 2 the export could not complete."""

import shlex
from pathlib import Path

import click

from resumeproof.cli.common import CONTEXT, Command, debug_option, parsed, prog, timeout_option


@click.command(name="export", cls=Command, context_settings=CONTEXT)
@click.argument("run", type=click.Path(path_type=Path))
@click.argument("dest")
@click.option("--all", "everything", is_flag=True, help="Every valid resume point (generations), not only the newest.")
@click.option(
    "--train-cmd",
    metavar="CMD",
    help="Training command that resumes a point (docs/protocol.md).  [default: the one the run recorded]",
)
@timeout_option("a resuming process")
@debug_option
def run_export(run: Path, dest: str, everything: bool, train_cmd: str | None, timeout: float, debug: bool) -> int:
    """Copy RUN's resume points to DEST (a folder or an fsspec URL: s3://, gs://, file://) and prove the copy.

    Every file is read back from DEST and checked (size, sha256), the copy passes `resumeproof check`, and one
    update resumed from the copy equals one resumed from RUN, bit for bit. DEST/CURRENT then names the new
    export; until then the earlier one stays. Exit 0: proven; 1: a check failed; 2: could not complete."""
    from resumeproof.verify.export.report import print_export
    from resumeproof.verify.export.run import run as export
    from resumeproof.verify.export.settings import ExportSettings
    from resumeproof.verify.report import terminal

    given = [*(["--all"] if everything else []), *(["--train-cmd", train_cmd] if train_cmd else [])]
    line = shlex.join([*prog().split(), str(run), dest, *given])  # for EXPORT.json and PROOF.md
    asked = parsed(
        lambda: ExportSettings(
            run=run, dest=dest, everything=everything, train_cmd=train_cmd, timeout=timeout, command=line
        )
    )
    out = terminal.console()
    with out.status(f"export: {run} to {dest}") as status:
        result, left = export(asked, lambda said: status.update(f"export: {said}"))
    print_export(out, result, left)
    return result.exit_code()
