"""`resumeproof export RUN DEST`: a run's resume points copied to DEST, read back, checked and resumed from; exit 0
proven, 1 a check failed (the earlier export stays current), 2 the export could not complete."""

import shlex
from pathlib import Path

import click
from click.core import ParameterSource

from resumeproof.cli.common import CONTEXT, Command, debug_option, parsed, prog, timeout_option
from resumeproof.verify.export.signature import PASSWORD_ENV, SIGN_KEY, SignWith
from resumeproof.verify.settings import SettingsError


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
@click.option(
    "--sign-key",
    type=click.Path(path_type=Path),
    metavar="KEY.pem",
    help="Sign the export: model.sig, an OpenSSF Model Signing signature over its folder, made with this "
    "elliptic-curve private key (PEM; with --sign-cert, the certificate's key), checked before anything is copied.",
)
@click.option(
    "--sign-password",
    metavar="TEXT",
    envvar=PASSWORD_ENV,
    help=f"The password of an encrypted --sign-key (better: the variable {PASSWORD_ENV}).",
)
@click.option(
    "--sign-cert",
    type=click.Path(path_type=Path),
    metavar="CERT.pem",
    help="Sign with this certificate of --sign-key (PEM), offline; needs --sign-chain.",
)
@click.option(
    "--sign-chain",
    type=click.Path(path_type=Path),
    multiple=True,
    metavar="CHAIN.pem",
    help="The certificates --sign-cert chains to, up to its root (PEM; repeatable): the export verifies against them.",
)
@debug_option
def run_export(
    run: Path,
    dest: str,
    everything: bool,
    train_cmd: str | None,
    timeout: float,
    sign_key: Path | None,
    sign_password: str | None,
    sign_cert: Path | None,
    sign_chain: tuple[Path, ...],
    debug: bool,
) -> int:
    """Copy RUN's resume points to DEST (a folder or an fsspec URL: s3://, gs://, file://) and prove the copy.

    Every file is read back from DEST and checked (size, sha256), the copy passes `resumeproof check`, and one
    update resumed from the copy equals one resumed from RUN, bit for bit. With --sign-key, model.sig then signs
    the export's folder and is verified as read back. DEST/CURRENT then names the new export; until then the
    earlier one stays. Exit 0: proven; 1: a check failed; 2: could not complete."""
    from resumeproof.verify.export.report import print_export
    from resumeproof.verify.export.run import run as export
    from resumeproof.verify.export.settings import ExportSettings
    from resumeproof.verify.report import terminal

    given = [*(["--all"] if everything else []), *(["--train-cmd", train_cmd] if train_cmd else [])]
    given += _signing_given(sign_key, sign_cert, sign_chain)
    line = shlex.join([*prog().split(), str(run), dest, *given])  # for EXPORT.json and PROOF.md: no password
    sign = parsed(lambda: _sign_with(sign_key, sign_password, sign_cert, sign_chain))
    asked = parsed(
        lambda: ExportSettings(
            run=run, dest=dest, everything=everything, train_cmd=train_cmd, timeout=timeout, command=line, sign=sign
        )
    )
    out = terminal.console()
    with out.status(f"export: {run} to {dest}") as status:
        result, left = export(asked, lambda said: status.update(f"export: {said}"))
    print_export(out, result, left)
    return result.exit_code()


def _sign_with(key: Path | None, password: str | None, cert: Path | None, chain: tuple[Path, ...]) -> SignWith | None:
    """What the export signs with; the options that need --sign-key refused without it (a password in the
    environment alone is not asked for)."""
    if key is not None:
        return SignWith(key=key, password=password, cert=cert, chain=chain)
    typed = click.get_current_context().get_parameter_source("sign_password") is ParameterSource.COMMANDLINE
    for flag, value in (
        ("--sign-cert", cert),
        ("--sign-chain", chain),
        ("--sign-password", password if typed else None),
    ):
        if value:
            raise SettingsError(flag, f"needs {SIGN_KEY}")
    return None


def _signing_given(key: Path | None, cert: Path | None, chain: tuple[Path, ...]) -> list[str]:
    """The signing options as typed, for the command line EXPORT.json records (never the password)."""
    given = [*(["--sign-key", str(key)] if key else []), *(["--sign-cert", str(cert)] if cert else [])]
    return given + [arg for path in chain for arg in ("--sign-chain", str(path))]
