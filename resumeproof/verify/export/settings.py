"""What one export is asked to do, checked once."""

from dataclasses import dataclass
from pathlib import Path

from resumeproof.verify.export.signature import SignWith
from resumeproof.verify.settings import SettingsError, parse_train_cmd


@dataclass(frozen=True, kw_only=True)
class ExportSettings:
    run: Path  # a run directory, or the output of `resumeproof verify`
    dest: str  # a local folder, or an fsspec URL (s3://bucket/prefix, gs://..., file://...)
    everything: bool = False  # --all: every valid resume point, not only the newest
    train_cmd: str | None = None  # --train-cmd: else the command the run recorded
    timeout: float = 600.0  # seconds each resuming process may run
    command: str = ""  # the export's own command line, for EXPORT.json and PROOF.md
    sign: SignWith | None = None  # --sign-key (--sign-cert, --sign-chain): model.sig over the export, before CURRENT

    def __post_init__(self) -> None:
        if self.train_cmd is not None:
            parse_train_cmd(self.train_cmd)
        if not self.dest.strip():
            raise SettingsError("DEST", "is empty")
        if self.timeout <= 0:
            raise SettingsError("--timeout", f"{self.timeout:g}: must be positive")
