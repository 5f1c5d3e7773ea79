"""`resumeproof check` and `resumeproof flat`: checkpoint files judged without loading them (and an export's
signature verified), and the classic flat file of weights and Adam moments."""

from pathlib import Path
from typing import TYPE_CHECKING

import click

from resumeproof.cli.common import CONTEXT, Command, debug_option
from resumeproof.common import codec
from resumeproof.common.errors import EXIT_ERROR, EXIT_FAILED, EXIT_PASSED
from resumeproof.verify.settings import Allowances

if TYPE_CHECKING:
    from resumeproof.verify.export.signature import Trust, Verified


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
@click.option(
    "--public-key",
    type=click.Path(path_type=Path),
    metavar="PUB.pem",
    help="Verify the signature (model.sig) of the export each PATH is or lies in with this public key (PEM); "
    "a PATH in no signed export fails.",
)
@click.option(
    "--cert-chain",
    type=click.Path(path_type=Path),
    multiple=True,
    metavar="CHAIN.pem",
    help="Verify a certificate-signed export against these certificates, up to the root (PEM; repeatable).",
)
@debug_option
def run_check(
    paths: tuple[Path, ...],
    as_json: bool,
    allow_unsafe_pickle,
    allow_opaque,
    public_key: Path | None,
    cert_chain: tuple[Path, ...],
    debug: bool,
) -> int:
    """Check checkpoints load under weights_only, without torch and without running them.

    Each PATH is a file, a DCP directory or a framework's checkpoint directory; it passes when
    torch.load(weights_only=True) would load it. A PATH that is an export's folder (resumeproof export), or lies
    in one, has the folder's signature verified with --public-key or --cert-chain, and reported unverified
    without. Exit 0: every one would load (and every signature asked for verifies); 1: one is refused (or a
    signature fails); 2: one is missing or unreadable."""
    import json

    from resumeproof.verify.export.signature import Status, trust
    from resumeproof.verify.run.vet import Verdict, vet

    allow = Allowances(unsafe_pickle=tuple(allow_unsafe_pickle), opaque=tuple(allow_opaque))
    trusted = trust(public_key, cert_chain)  # an unreadable key: one line and exit 2, before any path
    found = [vet(path, allow) for path in paths if not _is_export(path)]
    signatures = _signatures(paths, trusted)
    failed = [s for s in signatures if s.status is Status.FAILED]
    if as_json:
        document = {
            "accepted": all(v.verdict is Verdict.ACCEPTED for v in found) and not failed,
            "paths": codec.encode(found),
            "signatures": codec.encode(signatures),
        }
        click.echo(json.dumps(document, indent=1))
    else:
        for v in found:
            click.echo(v.line(), err=v.verdict is not Verdict.ACCEPTED)
        for s in signatures:
            click.echo(s.line(), err=s.status is Status.FAILED)
    verdicts = {v.verdict for v in found}
    if Verdict.UNREADABLE in verdicts:
        return EXIT_ERROR
    return EXIT_FAILED if Verdict.REFUSED in verdicts or failed else EXIT_PASSED


def _is_export(path: Path) -> bool:
    """An export's folder: what `check` verifies of it is its signature (a point of it is checked by its own path)."""
    from resumeproof.verify.export.transfer import EXPORT_JSON

    return path.is_dir() and (path / EXPORT_JSON).is_file()


def _signatures(paths: tuple[Path, ...], trusted: "Trust | None") -> list["Verified"]:
    """The signature of each export folder a PATH is or lies in, once per folder. With a key given, a PATH in no
    export fails (nothing signed it); without, an unsigned export is said only where a PATH is its folder."""
    from resumeproof.verify.export.signature import SIGNATURE, Status, Verified, folder_of, verify
    from resumeproof.verify.export.transfer import EXPORT_JSON

    found: dict[Path, Verified] = {}
    for path in paths:
        folder = folder_of(path, EXPORT_JSON)
        if folder is None:
            if trusted is not None:
                said = f"not in an export (no {EXPORT_JSON} at or above it): nothing signed it"
                found[path.absolute()] = Verified(folder=path, status=Status.FAILED, reason=said)
            continue
        if folder.resolve() in found:
            continue
        checked = verify(folder, trusted)
        if checked is None and folder == path:
            checked = Verified(
                folder=folder, status=Status.UNVERIFIED, reason=f"no {SIGNATURE}: the export is not signed"
            )
        if checked is not None:
            found[folder.resolve()] = checked
    return list(found.values())


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
