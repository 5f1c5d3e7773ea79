"""`resumeproof check`: whether a checkpoint someone sent loads under torch.load(weights_only=True), told
without torch and without running a byte of it.

A path is a file (a torch.save archive), a DCP directory, or a framework's checkpoint directory, judged
as the verifier judges its own trajectories' checkpoints (verify/run/admission.py): a file by the torch-free
weights_only check, a directory by every file's kind. A sidecar beside it (`PATH.sha256`, as the protocol
writes) is verified when present: file for file for a directory, and then the directory may hold nothing
else.
"""

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from resumeproof.common import fingerprint, weights_only
from resumeproof.common.allowances import NONE_ALLOWED, Allowances
from resumeproof.common.checkpoint_files import FileInfo
from resumeproof.common.errors import one_line
from resumeproof.verify.run import admission


class Verdict(StrEnum):
    ACCEPTED = "accepted"  # loads under torch.load(weights_only=True): exit 0
    REFUSED = "refused"  # would not, or cannot be shown to: exit 1
    UNREADABLE = "unreadable"  # missing, or cannot be read: exit 2


@dataclass(frozen=True, kw_only=True)
class Vetted:
    path: Path
    verdict: Verdict
    kind: str | None = None  # a file's kind ("torch"), or "directory"
    tensors: int = 0
    sidecar: bool = False  # a .sha256 beside it was verified
    reason: str | None = None  # why it is refused or unreadable, one line naming the file
    files: tuple[FileInfo, ...] = ()  # a directory's files, each classified

    def line(self) -> str:
        if self.verdict is not Verdict.ACCEPTED:
            return f"{self.path}: {self.verdict}: {self.reason}"
        what = f"{len(self.files)} files ({self._kinds()})" if self.kind == "directory" else f"a {self.kind} archive"
        signed = ", sidecar matches" if self.sidecar else ""
        return f"{self.path}: accepted: {what}, {self.tensors} tensors{signed}"

    def _kinds(self) -> str:
        kinds: dict[str, int] = {}
        for f in self.files:
            kinds[f.kind] = kinds.get(f.kind, 0) + 1
        return ", ".join(f"{n} {kind}" for kind, n in kinds.items())


def vet(path: Path, allow: Allowances = NONE_ALLOWED, advise: bool = True) -> Vetted:
    """Vet one path; never raises for what it finds in the file. Without `advise`, a refusal names no --allow-*
    option (for a script's own checkpoint under verify --observe, which takes none)."""
    if not path.exists() and not path.is_symlink():
        return Vetted(path=path, verdict=Verdict.UNREADABLE, reason="no such file or directory")
    try:
        kind = "directory" if path.is_dir() else "file"
        signed = fingerprint.sidecar(path).exists()
        found = admission.admit(path, allow, sidecar=signed, advise=advise)
    except OSError as err:
        return Vetted(path=path, verdict=Verdict.UNREADABLE, reason=one_line(err))
    except (fingerprint.FingerprintError, weights_only.WeightsOnlyError) as err:
        return Vetted(path=path, verdict=Verdict.REFUSED, kind=kind, sidecar=signed, reason=one_line(err))
    if found.refusal is not None:
        return Vetted(
            path=path, verdict=Verdict.REFUSED, kind=kind, sidecar=signed, files=found.files, reason=found.refusal
        )
    accepted = "torch" if kind == "file" else kind  # an accepted file is a torch.save archive
    return Vetted(
        path=path, verdict=Verdict.ACCEPTED, kind=accepted, tensors=found.tensors, sidecar=signed, files=found.files
    )
