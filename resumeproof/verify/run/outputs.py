"""What a finished trajectory proved, as the types the rest of the verifier holds: its summary, and the
`CheckpointInfo` of its checkpoint. verify/run/accept.py decides it; verify/run/trajectories.py keeps it.
"""

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from resumeproof.common import fingerprint, manifest
from resumeproof.common.protocol import CheckId, CheckKind
from resumeproof.verify.run.summary import Summary
from resumeproof.verify.vocabulary.findings import Check

if TYPE_CHECKING:  # the classifier loads the checkers: only verify/run/accept.py needs them at run time
    from resumeproof.common.checkpoint_files import FileInfo


@dataclass(frozen=True)
class CheckpointInfo:
    path: Path
    sha256: str  # of the bytes on disk, equal to the sidecar's (a directory: of its sidecar's text)
    tensors: int
    checked_by: tuple[str, ...]  # the loaders that accepted it
    files: "tuple[FileInfo, ...]" = ()  # a directory's files, each classified

    def check(self, trajectory: str) -> Check:
        """The check verification.json lists for this checkpoint."""
        if self.files:
            kinds = Counter(f.kind for f in self.files)
            allowed = [f"{f.path} ({f.kind}, by {f.allowed_by})" for f in self.files if f.allowed_by]
            detail = f"{len(self.files)} files match the sidecar; " + ", ".join(f"{n} {k}" for k, n in kinds.items())
            detail += f"; allowed explicitly: {', '.join(allowed)}" if allowed else ""
        else:
            detail = f"sha256 matches; {self.tensors} tensors, plain data ({', '.join(self.checked_by)})"
        return Check(
            id=CheckId(kind=CheckKind.CHECKPOINT, trajectory=trajectory),
            name=f"checkpoint {trajectory}: fingerprint and weights_only",
            passed=bool(self.sha256) and bool(self.checked_by) and not any(f.refused for f in self.files),
            detail=detail,
        )

    def unchanged(self) -> bool:
        """The checkpoint still holds the bytes it was accepted with."""
        if self.files:
            try:
                return manifest.verify(self.path)[0] == self.sha256
            except manifest.ManifestError:
                return False
        return fingerprint.sha256_file(self.path) == self.sha256


@dataclass(frozen=True)
class Accepted:
    summary: Summary
    checkpoint: CheckpointInfo
