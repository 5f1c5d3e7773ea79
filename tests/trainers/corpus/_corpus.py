"""What the diagnosis corpus's trainers share: a command line of the protocol's flags plus their own, toy data, meta.

Each trainer in this folder is a user's loop with one realistic resume bug, chosen with `--bug NAME`;
without `--bug` it is the same loop resumed correctly (the family's control). The corpus table,
with the true cause of each bug, is `benchmarks/diagnosis.py`.
"""

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any

import torch

from resumeproof import kit


def chosen_bug(bugs: Sequence[str]) -> str | None:
    """The `--bug` of this command line, read before the parts are known (some bugs change them)."""
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    parser.add_argument("--bug", choices=bugs)
    return parser.parse_known_args()[0].bug


def parse(
    parts: Sequence[str],
    doc: str | None,
    *,
    bugs: Sequence[str] = (),
    options: Callable[[argparse.ArgumentParser], None] | None = None,
) -> tuple[kit.ProtocolArgs, argparse.Namespace]:
    """The protocol's flags (checked by the kit) and the trainer's own (`--bug`, `options`); an existing
    --output refused before any work."""
    parser = argparse.ArgumentParser(description=doc, allow_abbrev=False)
    kit.flags.add_arguments(parser, parts)
    if bugs:
        parser.add_argument("--bug", choices=bugs, help="Run this resume bug instead of the correct resume.")
    if options is not None:
        options(parser)
    namespace = parser.parse_args()
    try:
        args = kit.flags.from_namespace(namespace, parts)
    except kit.ResumeproofError as err:
        parser.error(str(err))
    kit.refuse_existing(args.output)
    return args, namespace


def protocol_argv(bugs: Sequence[str]) -> list[str]:
    """This command line without `--bug NAME`: what `kit.start` parses, for trainers built on it."""
    argv, skip = [], False
    for item in sys.argv[1:]:
        if skip:
            skip = False
        elif item == "--bug":
            skip = True
        elif not item.startswith("--bug="):
            argv.append(item)
    return argv


def regression(rows: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Two inputs, one smooth target: enough for a loss that moves at every update."""
    x = torch.linspace(-1, 1, 2 * rows).reshape(rows, 2)
    return x, x[:, :1] - 2 * x[:, 1:] + 0.3 * torch.sin(3 * x[:, :1])


def meta(args: kit.ProtocolArgs, parts: Sequence[str], **extra: Any) -> dict[str, Any]:
    """`omitted` (protocol 1.1, section 6) and `parts` (1.2: the parts this trainer declares, which
    `--faults all` asks for), written by hand as a trainer that does not use `args.meta()` would."""
    return {"omitted": sorted(args.omit), "parts": list(parts), **extra}
