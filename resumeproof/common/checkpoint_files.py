"""What each file of a checkpoint holds, told from its bytes and never by loading it.

- `torch`: a torch.save archive the weights_only check accepts. Safe.
- `safetensors`: an 8-byte header length, a JSON header, every tensor inside the file. Safe.
- `json`, `text`: UTF-8 JSON, or UTF-8 text without NUL bytes. Safe.
- `plain-pickle`: a pickle that references no global at all: there is nothing it could call. Safe.
- `dcp-metadata`: a torch.distributed.checkpoint `.metadata` whose globals are all in the DCP allowlist,
  naming no non-tensor item, of a valid structure (common/dcp_check.py). Safe.
- `dcp-data`: a DCP data file `__R_N.distcp` beside a valid `.metadata`, tiled exactly by the items it
  describes, each a torch.save archive the weights_only check accepts. Safe.
- `pickle`: a pickle, bare or as a torch archive's data.pkl, that needs globals outside weights_only's
  allowlist: it can run code when loaded. Refused unless allowed.
- `opaque`: anything else; the verifier cannot tell how the trainer reads it. Refused unless allowed.

A refused kind is allowed per file with `--allow-unsafe-pickle GLOB` (pickles) or `--allow-opaque
GLOB` (opaque files), matched against the file's path inside the checkpoint; the allowance is
recorded in verification.json beside the file.
"""

import json
import struct
from dataclasses import dataclass, field
from pathlib import Path

from resumeproof.common import codec, dcp_check, dcp_files, weights_only
from resumeproof.common.allowances import Allowances

SAFE = ("torch", "safetensors", "json", "text", "plain-pickle", "dcp-metadata", "dcp-data")
PICKLE_PROTOCOLS = range(2, 6)
SAFETENSORS_HEADER_MAX = 100 * 1024 * 1024  # what the safetensors library itself accepts
SCRIPT_LOADS = "the script loads it itself (verify --observe never does, and needs no --allow-* option to resume it)"


@dataclass(frozen=True)
class FileInfo:
    path: str  # inside the checkpoint directory
    sha256: str
    kind: str
    tensors: int | None = None  # torch archives
    globals: tuple[str, ...] = ()  # pickles: what loading would import and call
    allowed_by: str | None = None  # the --allow-* pattern that let an unsafe file through
    # a DCP file's refusal, for the message (not in verification.json)
    why: str | None = field(default=None, metadata=codec.field(skip=True))

    @property
    def refused(self) -> bool:
        return self.kind not in SAFE and self.allowed_by is None


def classify(path: Path, name: str, sha256: str, allow: Allowances) -> FileInfo:
    """The kind of the file at `path` (`name` inside its checkpoint), with the allowance that let it through."""
    if path.name == dcp_files.METADATA or dcp_files.DATA_FILE.fullmatch(path.name):
        kind, tensors, found, why = _dcp(path)
        return FileInfo(name, sha256, kind, tensors, found, allow.pattern_for(kind, name), why)
    with open(path, "rb") as f:
        head = f.read(8)
    kind, tensors, found = _kind(path, head)
    return FileInfo(name, sha256, kind, tensors, found, allow.pattern_for(kind, name))


def refusal(info: FileInfo, advise: bool = True) -> str:
    """Why a refused file is refused, in one line naming it, and the option that would allow it; without `advise`
    (`verify --observe`, which resumes from a script's own checkpoint as it is and takes no --allow-* option), what
    is true there instead."""
    option = "--allow-unsafe-pickle" if info.kind == "pickle" else "--allow-opaque"
    allow = f"allow it explicitly with {option} '{info.path}'" if advise else SCRIPT_LOADS
    if info.why is not None:
        return f"{info.path}: {info.why}; {allow}"
    if info.kind == "pickle":
        shown = ", ".join(info.globals[:6]) + (", ..." if len(info.globals) > 6 else "")
        return f"{info.path}: a pickle that can run code when loaded (it needs {shown}); {allow}"
    return f"{info.path}: cannot tell what it holds; {allow}"


def _dcp(path: Path) -> tuple[str, int | None, tuple[str, ...], str | None]:
    """A DCP file: its `.metadata`, or a data file judged against the `.metadata` beside it."""
    try:
        if path.name == dcp_files.METADATA:
            dcp_check.check_files(path.parent, dcp_check.read(path.parent))
            return "dcp-metadata", None, (), None
        return "dcp-data", dcp_check.check_data_file(path), (), None
    except (dcp_check.DcpError, weights_only.WeightsOnlyError) as err:
        found = getattr(err, "globals", ())
        why = str(err).replace(f"{path.parent}/", "")
        return ("pickle" if found else "opaque"), None, found, why


def _kind(path: Path, head: bytes) -> tuple[str, int | None, tuple[str, ...]]:
    if head.startswith(b"PK\x03\x04"):
        return _archive(path)
    if len(head) >= 2 and head[0] == 0x80 and head[1] in PICKLE_PROTOCOLS:
        return _pickle(path.read_bytes())
    if len(head) == 8 and _safetensors(path, struct.unpack("<Q", head)[0]):
        return "safetensors", None, ()
    return _text(path), None, ()


def _archive(path: Path) -> tuple[str, int | None, tuple[str, ...]]:
    try:
        return "torch", weights_only.check(path).tensors, ()
    except weights_only.WeightsOnlyError:
        pass
    import zipfile  # only for a refused archive: a checkpoint that passes never needs it

    try:  # refused: name what its pickle would need (read only to list globals, never to load)
        with zipfile.ZipFile(path) as archive:
            pickles = [n for n in archive.namelist() if n.endswith("data.pkl")]
            data = archive.read(pickles[0]) if len(pickles) == 1 else b""
    except (zipfile.BadZipFile, OSError, KeyError, EOFError):
        data = b""
    _, _, found = _pickle(data) if data else ("opaque", None, ())
    return ("pickle" if found else "opaque"), None, found


def _pickle(data: bytes) -> tuple[str, int | None, tuple[str, ...]]:
    try:
        found = tuple(weights_only.pickle_globals(data))
    except weights_only.WeightsOnlyError:
        return "opaque", None, ()  # a pickle whose globals cannot be told statically
    return ("pickle" if found else "plain-pickle"), None, found


def _safetensors(path: Path, header_size: int) -> bool:
    """An 8-byte length, a JSON object header of that length, and every tensor's bytes inside the file."""
    size = path.stat().st_size
    if not 2 <= header_size <= min(SAFETENSORS_HEADER_MAX, size - 8):
        return False
    with open(path, "rb") as f:
        f.seek(8)
        raw = f.read(header_size)
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return False
    if not isinstance(header, dict):
        return False
    data = size - 8 - header_size
    for key, entry in header.items():
        if key == "__metadata__":
            continue
        offsets = entry.get("data_offsets") if isinstance(entry, dict) else None
        if not (isinstance(offsets, list) and len(offsets) == 2 and 0 <= offsets[0] <= offsets[1] <= data):
            return False
    return True


def _text(path: Path) -> str:
    raw = path.read_bytes()
    try:
        decoded = raw.decode("utf-8")
    except UnicodeDecodeError:
        return "opaque"
    try:
        json.loads(decoded)
        return "json"
    except json.JSONDecodeError:
        return "text" if "\x00" not in decoded else "opaque"
