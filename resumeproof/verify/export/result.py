"""What one export did, built once: EXPORT.json (its schema: docs/export.schema.json), PROOF.md and the terminal
report all read the same `Export`."""

from dataclasses import dataclass, field
from typing import Any

from resumeproof.common import codec
from resumeproof.common.errors import EXIT_FAILED, EXIT_PASSED
from resumeproof.common.protocol import CheckKind, dumps
from resumeproof.verify.export.signature import Signed
from resumeproof.verify.export.source import Command, Kind, Point, Skipped

FORMAT = "resumeproof-export/1"


@dataclass(frozen=True, kw_only=True)
class Copied:
    """One file as it was sent: its path in the export (as in RUN), its size and the sha256 of the bytes sent."""

    path: str
    size: int
    sha256: str


@dataclass(frozen=True, kw_only=True)
class ExportCheck:
    kind: CheckKind  # COPY, CHECKPOINT (`resumeproof check` on the copy), RESTORABLE or SIGNATURE
    name: str  # what a person reads; never what a program matches
    passed: bool
    path: str | None = None  # the resume point it is about, relative to the export
    detail: str | None = None


@dataclass(frozen=True, kw_only=True)
class Export:
    id: str  # the export's folder under DEST/exports/
    created: str  # UTC, ISO 8601
    command: str  # the export's command line
    run: str  # RUN, absolute
    kind: Kind
    destination: str  # DEST as typed
    replaces: str | None  # the export CURRENT named before, kept until this one passed
    points: tuple[Point, ...]  # newest first: the first was resumed from
    skipped: tuple[Skipped, ...]
    notes: tuple[str, ...]
    files: tuple[Copied, ...]  # every file of the export but EXPORT.json, PROOF.md and model.sig
    trainer: Command
    recorded: dict[str, Any]  # the run's configuration, identity and versions, as its summary's meta records them
    exporter: dict[str, Any]  # what exported it: resumeproof, Python, platform, fsspec
    checks: tuple[ExportCheck, ...]
    signature: Signed | None = None  # --sign-key: by whom model.sig is signed, written before it is (and checked)
    # where the resuming processes' logs were kept on this machine (not proven): not in JSON
    logs: str | None = field(default=None, metadata=codec.field(skip=True))

    @property
    def proven(self) -> bool:
        return bool(self.checks) and all(c.passed for c in self.checks)

    @property
    def step(self) -> int:
        return self.points[0].step

    @property
    def location(self) -> str:
        return f"{self.destination.rstrip('/')}/exports/{self.id}"

    def exit_code(self) -> int:
        return EXIT_PASSED if self.proven else EXIT_FAILED

    def to_json(self) -> dict[str, Any]:
        """EXPORT.json: the fields, among what it says for a reader."""
        return codec.encode(
            {
                "format": FORMAT,
                "proven": self.proven,
                "id": self.id,
                "created": self.created,
                "command": self.command,
                "source": {"run": self.run, "kind": self.kind},
                "destination": self.destination,
                "replaces": self.replaces,
                "step": self.step,
                "points": self.points,
                "skipped": self.skipped,
                "notes": self.notes,
                "files": self.files,
                "trainer": self.trainer,
                "recorded": self.recorded,
                "exporter": self.exporter,
                "signature": self.signature,
                "checks": self.checks,
            }
        )

    def document(self) -> bytes:
        return dumps(self.to_json()).encode()
