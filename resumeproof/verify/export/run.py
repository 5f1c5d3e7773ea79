"""One export from RUN to DEST, in the order that loses nothing (docs/export.md):

1. with --sign-key, the signer checked (signature.py: its key read, a probe signed and verified), then RUN's resume
   points checked and the command that resumes them found (source.py): a bad key, a bad RUN, a missing checkpoint or
   no command stops here, before DEST is touched;
2. DEST checked: not inside RUN, reachable, writable, holding nothing but exports (store.py, transfer.prepare);
3. the files sent to DEST/exports/<id>/, hashed as they are sent;
4. every file read back from DEST and compared, size and sha256; `resumeproof check` on each resume point of the
   copy; one update resumed from the copy compared bit for bit with the reference (restorable.py), and the copy
   compared again after it (a resume must not write its input);
5. EXPORT.json and PROOF.md written beside the files, and read back;
6. with --sign-key, where every check passed: model.sig signed over the folder as it was read back (its files, listed
   in the signature, must be those sent), sent beside them, read back and verified with the signer's key: the
   `signature` check; where it fails, EXPORT.json and PROOF.md are written again saying so;
7. only where every check passed: CURRENT written, last, naming the new export; then the earlier one removed.
"""

import io
import platform
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from resumeproof.common.errors import one_line
from resumeproof.common.fingerprint import sha256_file
from resumeproof.common.protocol import CheckKind
from resumeproof.verify.export import restorable, signature, source, transfer
from resumeproof.verify.export.report import proof_md
from resumeproof.verify.export.result import Copied, Export, ExportCheck
from resumeproof.verify.export.settings import ExportSettings
from resumeproof.verify.export.signature import SIGNATURE, Signer
from resumeproof.verify.export.source import Command, Point, Source
from resumeproof.verify.export.store import RemoteStore, Store, StoreError, open_store
from resumeproof.verify.run.environment import version
from resumeproof.verify.run.vet import Verdict, vet

COPY, LOGS = "copy", "logs"  # under the work folder: the copy as it came back from a URL; the processes' logs
SIGNING = "signing"  # under the work folder: model.sig as signed, and the signer's public key to verify it with


def run(s: ExportSettings, say: Callable[[str], object] = lambda _: None) -> tuple[Export, list[str]]:
    """The export, and what of the earlier exports could not be removed once the new one was current."""
    signer = signature.signer(s.sign) if s.sign is not None else None  # a bad key: one line, nothing copied
    src = source.read(s.run, s.everything)
    trainer = source.command(src, s.train_cmd)
    store = open_store(s.dest, src.run)
    previous = transfer.prepare(store)
    work = Path(tempfile.mkdtemp(prefix="resumeproof-export-"))
    try:
        export, left = _export(s, src, trainer, store, previous, work, signer, say)
    except restorable.ReferenceFailed:
        _tidy(work, keep_logs=True)  # the error names its log
        raise
    except BaseException:
        _tidy(work, keep_logs=False)
        raise
    _tidy(work, keep_logs=export.logs is not None)
    return export, left


def _export(
    s: ExportSettings,
    src: Source,
    trainer: Command,
    store: Store,
    previous: str | None,
    work: Path,
    signer: Signer | None,
    say: Callable[[str], object],
) -> tuple[Export, list[str]]:
    now = datetime.now(UTC)
    ident = transfer.new_id(src.points[0].step, now)
    prefix = f"{transfer.EXPORTS}/{ident}"
    say(f"copying {len(src.files)} files of step {src.points[0].step} to {s.dest}")
    copied = transfer.send(store, src.run, src.files, prefix, _expected(src))
    checks = _checks(src, trainer, store, prefix, copied, work, s, say)
    logs = str(work / LOGS) if (work / LOGS).exists() and not all(c.passed for c in checks) else None
    signing = signer if signer is not None and all(c.passed for c in checks) else None  # only a proven copy is signed
    if signing is not None:
        checks.append(_to_sign(signing))  # EXPORT.json is signed: it says by whom before the signature exists
    export = Export(
        id=ident, created=now.strftime("%Y-%m-%dT%H:%M:%SZ"), command=s.command, run=str(src.run), kind=src.kind,
        destination=s.dest, replaces=previous, points=src.points, skipped=src.skipped, notes=src.notes, files=copied,
        trainer=trainer, recorded=src.meta(), exporter=_exporter(store, signing), checks=tuple(checks),
        signature=signing.signed if signing is not None else None, logs=logs,
    )  # fmt: skip
    written = _documents(store, prefix, export, work)
    if signing is not None:
        say(f"signing the export with {signing.signed.signer}")
        export, written = _signed(store, prefix, export, written, signing, work)
    return export, transfer.publish(store, ident, written) if export.proven else []


def _checks(
    src: Source,
    trainer: Command,
    store: Store,
    prefix: str,
    copied: tuple[Copied, ...],
    work: Path,
    s: ExportSettings,
    say: Callable[[str], object],
) -> list[ExportCheck]:
    """The checks in order, each only once the ones before it passed: a copy that did not come back whole is
    not resumed from."""
    say("reading every file back from DEST")
    root, copy = transfer.read_back(store, prefix, copied, work / COPY)
    checks = [copy, *(_checked(root, point) for point in src.points)] if copy.passed else [copy]
    if not all(c.passed for c in checks):
        return checks
    say(f"resuming from the copy of {src.points[0].path} for one update")
    proof = restorable.prove(src, trainer, root, work, s.timeout)
    written = transfer.differences(root, [c for c in copied if _of(src.points[0], c.path)])
    if written:
        proof = replace(proof, passed=False, detail=f"the resume wrote into the copy: {written[0]}")
    return [*checks, proof]


def _checked(root: Path, point: Point) -> ExportCheck:
    """`resumeproof check` on a resume point of the copy; its sidecar, which travelled with it, must be there."""
    found = vet(root / point.path)
    passed = found.verdict is Verdict.ACCEPTED and found.sidecar
    said = found.line().removeprefix(f"{found.path}: ")
    return ExportCheck(
        kind=CheckKind.CHECKPOINT,
        name=f"resumeproof check on the copy of {point.path}: fingerprint and weights_only",
        passed=passed,
        path=point.path,
        detail=said if found.sidecar else f"{said}; but no sidecar travelled with it",
    )


def _of(point: Point, path: str) -> bool:
    return path in (point.path, f"{point.path}.sha256") or path.startswith(f"{point.path}/")


def _expected(src: Source) -> dict[str, str]:
    return {path: digest for point in src.points for path, digest in point.digests.items()}


def _documents(store: Store, prefix: str, export: Export, work: Path) -> Copied:
    """EXPORT.json and PROOF.md beside the files, read back (a URL's beside its copy, where the signature is made);
    the EXPORT.json that CURRENT will name."""
    written = [
        transfer.put(store, prefix, transfer.EXPORT_JSON, io.BytesIO(export.document())),
        transfer.put(store, prefix, transfer.PROOF_MD, io.BytesIO(proof_md(export).encode())),
    ]
    _, back = transfer.read_back(store, prefix, written, work / COPY)
    if not back.passed:
        raise StoreError(f"DEST {store.url}: the proof does not read back ({back.detail}); nothing was replaced")
    return written[0]


def _to_sign(signer: Signer) -> ExportCheck:
    """The `signature` check as EXPORT.json records it, before the signature is made: CURRENT names the export only
    once it passed; where it fails, EXPORT.json is written again with the failure."""
    return ExportCheck(
        kind=CheckKind.SIGNATURE,
        name=f"{SIGNATURE} (OpenSSF Model Signing) covers every file sent and verifies with the signer's key",
        passed=True,
        detail=f"signed by {signer.signed.signer}; verified once EXPORT.json and PROOF.md were written, before CURRENT",
    )


def _signed(
    store: Store, prefix: str, export: Export, written: Copied, signer: Signer, work: Path
) -> tuple[Export, Copied]:
    """model.sig made over the folder as it was read back (a URL's copy, byte for byte DEST's), sent beside it, read
    back and verified with the signer's key: the export as proven, or with its `signature` check failed and its
    documents written again saying so."""
    root = store.local(prefix) or work / COPY
    failure = _signature_failure(store, prefix, export, root, signer, work / SIGNING)
    if failure is None:
        return export, written
    check = replace(export.checks[-1], passed=False, detail=failure)
    failed = replace(export, checks=(*export.checks[:-1], check))
    return failed, _documents(store, prefix, failed, work)


def _signature_failure(store: Store, prefix: str, export: Export, root: Path, signer: Signer, work: Path) -> str | None:
    """Why the export's signature fails, or None: made, it must list exactly the files sent (the copy, EXPORT.json,
    PROOF.md) with the sha256 sent; read back from DEST, it must verify over them with the signer's key."""
    made = work / SIGNATURE
    work.mkdir(parents=True, exist_ok=True)
    try:
        signature.sign(signer, root, made)
    except Exception as err:  # the library's own kinds: a link in the folder, a file that cannot be read
        return f"cannot sign {root}: {one_line(err)}"
    sent = {c.path: c.sha256 for c in export.files}
    sent |= {name: sha256_file(root / name) for name in (transfer.EXPORT_JSON, transfer.PROOF_MD)}
    wrong = signature.differences(signature.covered(made), sent)
    if wrong is not None:
        return f"{SIGNATURE} does not cover the files sent: {wrong}"
    with open(made, "rb") as sig:
        copied = transfer.put(store, prefix, SIGNATURE, sig)
    _, back = transfer.read_back(store, prefix, [copied], root)
    if not back.passed:
        return f"{SIGNATURE} does not read back as sent: {back.detail}"
    checked = signature.verify(root, signature.trust_of(signer, work))
    if checked is not None and checked.passed and checked.signer == signer.signed.signer:
        return None
    return checked.reason if checked is not None and checked.reason else f"{SIGNATURE} is not the signer's"


def _exporter(store: Store, signer: Signer | None) -> dict[str, str | None]:
    found = {"resumeproof": version("resumeproof"), "python": platform.python_version()}
    found["platform"] = platform.platform()
    if signer is not None:
        found["model_signing"] = version("model-signing")
    if isinstance(store, RemoteStore):
        backend = type(store.fs).__module__.split(".")[0]  # s3fs, gcsfs, fsspec (file://)
        found |= {"fsspec": version("fsspec"), backend: version(backend)}
    return found


def _tidy(work: Path, keep_logs: bool) -> None:
    """Remove the work folder (and the copy a URL's export downloaded into it), but the logs a failure names."""
    if not keep_logs:
        shutil.rmtree(work, ignore_errors=True)
        return
    for path in work.iterdir():
        if path.is_dir() and path.name != LOGS:
            shutil.rmtree(path, ignore_errors=True)
