"""The `resumeproof` command: verify, chaos, fork, check, flat, export, watch. The only place of the verifier's side
that turns an outcome into an exit code.

    resumeproof verify --output runs/proof [--train-cmd "python -B my_train.py"]
    resumeproof chaos --output runs/chaos --kills 20
    resumeproof fork runs/long/step_000100.pt --branch "low=--pivot lr=0.01" --branch "high=--pivot lr=0.1" \
        --steps 50 --output runs/fork
    resumeproof check received/checkpoint.pt [--json]
    resumeproof flat export runs/a/checkpoint.pt runs/a/flat.bin
    resumeproof export runs/long s3://bucket/long [--all]
    resumeproof watch --run runs/long/watch -- python train.py ...

Exit codes: 0 passed, 1 a comparison failed, 2 could not complete (one line, `--debug` for the
traceback): each command returns its code or raises, and common.py's `Command` alone ends the process.
This package and everything the verify, chaos, fork, check and export commands import never import
torch; `flat export` and `verify --torch-load` import it, late. One module per command (verify.py,
chaos.py, fork.py, export.py, watch.py; files.py for check and flat), what they share in common.py.
"""

import sys

import click

from resumeproof.cli.chaos import run_chaos
from resumeproof.cli.common import CONTEXT, DEFAULT_TRAIN_CMD
from resumeproof.cli.export import run_export
from resumeproof.cli.files import flat, run_check
from resumeproof.cli.fork import run_fork
from resumeproof.cli.verify import run_verify
from resumeproof.cli.watch import run_watch

__all__ = ["DEFAULT_TRAIN_CMD", "main", "verify_resume"]


@click.group(context_settings=CONTEXT)
@click.version_option(package_name="resumeproof", prog_name="resumeproof", message="%(prog)s %(version)s")
def main() -> None:
    """Prove that a PyTorch training command resumes exactly (docs/protocol.md)."""


for command in (run_verify, run_chaos, run_fork, run_check, flat, run_export, run_watch):
    main.add_command(command)


def verify_resume() -> None:
    """`python -B verify_resume.py [chaos] ...`: the verify and chaos commands under the script's name."""
    if sys.argv[1:2] == ["chaos"]:
        run_chaos(sys.argv[2:], prog_name="verify_resume.py chaos")
    else:
        run_verify(sys.argv[1:], prog_name="verify_resume.py")
