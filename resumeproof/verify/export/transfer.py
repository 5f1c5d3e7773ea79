"""The files of an export sent to DEST and read back, and DEST's layout:

    DEST/CURRENT            one sha256sum line naming exports/<id>/EXPORT.json: the export that passed, written last
    DEST/exports/<id>/      one export: RUN's files laid out as in RUN, with EXPORT.json and PROOF.md

Each export is written under a new id and nothing is ever moved (an object store has no rename). The earlier
export is removed only once CURRENT names the new one, so a kill at any instant leaves CURRENT naming a
complete, checked export; what a killed export left is removed by the next one that passes. `sha256sum -c
CURRENT`, run in DEST, checks the current EXPORT.json, which lists every file with its size and sha256.
"""

import hashlib
import re
import secrets
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import BinaryIO

from resumeproof.common.errors import ResumeproofError
from resumeproof.common.fingerprint import sha256_file
from resumeproof.common.protocol import CheckKind
from resumeproof.verify.export.result import Copied, ExportCheck
from resumeproof.verify.export.store import Store, StoreError

EXPORTS, CURRENT, EXPORT_JSON, PROOF_MD = "exports", "CURRENT", "EXPORT.json", "PROOF.md"
ID = re.compile(r"\d{8}T\d{6}Z-step\d{6,}-[0-9a-f]{6}")
PROBE = re.compile(r"\.probe-[0-9a-f]{12}")  # what a killed export's first write may leave
MARKER = re.compile(rf"([0-9a-f]{{64}})  {EXPORTS}/({ID.pattern})/{re.escape(EXPORT_JSON)}\n")
CHUNK = 1 << 20


class SourceChanged(ResumeproofError):
    """A file of RUN changed between its check and its copy."""


def new_id(step: int, now: datetime) -> str:
    return f"{now:%Y%m%dT%H%M%SZ}-step{step:06d}-{secrets.token_hex(3)}"


def prepare(store: Store) -> str | None:
    """DEST checked before anything is copied: it holds nothing but exports, and a file written there reads back.
    Returns the id of the export CURRENT names, if any."""
    strange = [name for name in store.children("") if name not in (CURRENT, EXPORTS)]
    if strange:
        raise StoreError(
            f"DEST {store.url}: holds {', '.join(strange[:3])}, which no export wrote; "
            "an export goes to an empty folder or to an earlier export's"
        )
    previous = current(store)
    probe, said = f"{EXPORTS}/.probe-{secrets.token_hex(6)}", b"resumeproof export probe\n"
    store.write(probe, lambda f: f.write(said))
    if store.read_text(probe) != said.decode():
        raise StoreError(f"DEST {store.url}: a file written there does not read back")
    store.remove(probe)
    return previous


def current(store: Store) -> str | None:
    """The id of the export CURRENT names; None where there is none yet."""
    text = store.read_text(CURRENT)
    if text is None:
        return None
    match = MARKER.fullmatch(text)
    if match is None:
        raise StoreError(f"DEST {store.url}: {CURRENT} is not an export's marker; refusing to touch DEST")
    return match.group(2)


def send(store: Store, run: Path, files: Sequence[str], prefix: str, expected: Mapping[str, str]) -> tuple[Copied, ...]:
    """Copy each file of RUN to `prefix`, hashing the bytes as they are sent; a file whose bytes are not those its
    check saw (`expected`, by path) changed under the export, which then stops."""
    copied = []
    for name in files:
        with open(run / name, "rb") as source:
            sent = put(store, prefix, name, source)
        if name in expected and expected[name] != sent.sha256:
            raise SourceChanged(f"{run / name}: changed while it was exported (sha256 {sent.sha256[:12]}...)")
        copied.append(sent)
    return tuple(copied)


def put(store: Store, prefix: str, name: str, source: BinaryIO) -> Copied:
    """One file to `prefix/name`, streamed: its size and the sha256 of exactly the bytes written."""
    digest, size = hashlib.sha256(), 0

    def fill(out: BinaryIO) -> None:
        nonlocal size
        while chunk := source.read(CHUNK):
            digest.update(chunk)
            size += len(chunk)
            out.write(chunk)

    store.write(f"{prefix}/{name}", fill)
    return Copied(path=name, size=size, sha256=digest.hexdigest())


def read_back(store: Store, prefix: str, copied: Sequence[Copied], into: Path) -> tuple[Path, ExportCheck]:
    """Every file read back from DEST (a URL's downloaded into `into`): its size and sha256 must be those sent.
    Returns the local folder that holds the copy as it came back, and the check."""
    local = store.local(prefix)
    root = local if local is not None else into
    if local is None:
        for c in copied:
            try:
                store.download(f"{prefix}/{c.path}", root / c.path)
            except FileNotFoundError:
                continue  # differences() names it
    wrong = differences(root, copied)
    detail = "; ".join(wrong[:3]) + (f"; {len(wrong) - 3} more" if len(wrong) > 3 else "")
    check = ExportCheck(
        kind=CheckKind.COPY,
        name="every file read back from DEST has the size and sha256 sent",
        passed=not wrong,
        detail=detail or f"{len(copied)} files, {sum(c.size for c in copied)} bytes",
    )
    return root, check


def differences(root: Path, copied: Sequence[Copied]) -> list[str]:
    """The files under `root` that are missing, or whose size or sha256 is not the one sent."""
    wrong = []
    for c in copied:
        path = root / c.path
        if not path.is_file():
            wrong.append(f"{c.path}: missing at DEST")
            continue
        size, sha = path.stat().st_size, sha256_file(path)
        if (size, sha) != (c.size, c.sha256):
            wrong.append(f"{c.path}: {size} bytes, sha256 {sha[:12]}... read back; {c.size}, {c.sha256[:12]}... sent")
    return wrong


def publish(store: Store, ident: str, export_json: Copied) -> list[str]:
    """Write CURRENT, last of all, naming the new export; then remove every other export and what killed ones left.
    Returns what could not be removed (the new export is current whatever happens to the old ones)."""
    marker = f"{export_json.sha256}  {EXPORTS}/{ident}/{EXPORT_JSON}\n"
    store.write(CURRENT, lambda f: f.write(marker.encode()))
    if current(store) != ident:
        raise StoreError(f"DEST {store.url}: {CURRENT} does not read back as written")
    left = []
    for name in store.children(EXPORTS):
        if name != ident and (ID.fullmatch(name) or PROBE.fullmatch(name)):
            try:
                store.remove(f"{EXPORTS}/{name}")
            except (StoreError, OSError) as err:
                left.append(f"{EXPORTS}/{name} could not be removed: {err}")
    return left
