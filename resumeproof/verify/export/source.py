"""What RUN holds to export: its resume points, newest first, each checked as the verifier checks a checkpoint
(fingerprint and weights_only, verify/run/accept.py); the files that go with them; the command that resumes them.

RUN is a run directory (checkpoint.pt and generations step_NNNNNN.pt, docs/long-runs.md) or the output of
`resumeproof verify` (its interrupted checkpoints, whose next update the continuous run holds). A point that
fails its check is skipped and named, never exported; the newest valid one is the one resumed from.
"""

import hashlib
import json
import shlex
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from resumeproof.common import codec, fingerprint, manifest, protocol, runfiles
from resumeproof.common.errors import ResumeproofError, one_line
from resumeproof.common.observation import FORMAT as OBSERVED
from resumeproof.common.protocol import CHECKPOINT, CONTINUOUS, SUMMARY
from resumeproof.verify.plan.trainer import point_names
from resumeproof.verify.report.result import Verification
from resumeproof.verify.run import accept
from resumeproof.verify.run.summary import Summary, read_summary
from resumeproof.verify.run.trajectories import TrajectoryError

VERIFICATION_JSON = "verification.json"
# What the export passes itself (docs/protocol.md, sections 1 and 6) and a long run's own cadence, dropped from a
# recorded command line: flags with a value, and the one without.
BARE = (protocol.OMIT_RNG_FLAG,)
VALUED = (
    *(flag for flag in protocol.RUN_FLAGS if flag not in BARE),
    protocol.CHECKPOINT_EVERY_FLAG, protocol.PACE_FLAG, protocol.KEEP_FLAG,
)  # fmt: skip


class SourceError(ResumeproofError):
    """RUN holds nothing that can be exported, or no command to resume it."""


class Kind(StrEnum):
    RUN = "run"  # a run directory
    VERIFICATION = "verification"  # the output of `resumeproof verify`


@dataclass(frozen=True, kw_only=True)
class Point:
    """A resume point that passed its check in RUN."""

    path: str  # relative to RUN
    step: int
    sha256: str  # as its sidecar records it (a directory: of the sidecar's text)
    # each of its files, relative to RUN, with the sha256 it was checked with (EXPORT.json lists them in `files`)
    digests: Mapping[str, str] = field(metadata=codec.field(skip=True))
    directory: bool = False


@dataclass(frozen=True, kw_only=True)
class Skipped:
    path: str  # relative to RUN
    reason: str


@dataclass(frozen=True, kw_only=True)
class Command:
    """The training command that resumes a point, without the protocol's flags."""

    argv: tuple[str, ...]
    # where it was read: --train-cmd, summary.json meta.argv, verification.json train_cmd
    origin: str = field(metadata=codec.field(key="from"))


@dataclass(frozen=True, kw_only=True)
class Source:
    run: Path  # absolute
    kind: Kind
    points: tuple[Point, ...]  # newest first, never empty: the first is resumed from
    skipped: tuple[Skipped, ...] = ()
    files: tuple[str, ...] = ()  # everything to copy, relative to RUN, the points' files included
    summary: Summary | None = None  # the summary of the run the newest point belongs to
    reference: Summary | None = None  # a verification's continuous run: it holds the next update
    verification: Verification | None = None
    notes: tuple[str, ...] = field(default=())  # what a reader must know: an unreadable summary, a link not copied

    def meta(self) -> dict[str, Any]:
        return self.summary.meta if self.summary is not None else {}


def read(run: Path, everything: bool) -> Source:
    """RUN's resume points (all valid ones with `everything`, else the newest valid one) and their files."""
    if not run.is_dir():
        raise SourceError(f"RUN {run}: {'not a directory' if run.exists() else 'no such directory'}")
    run = run.resolve()
    return _verification(run, everything) if (run / VERIFICATION_JSON).is_file() else _run_dir(run, everything)


def _run_dir(run: Path, everything: bool) -> Source:
    summary, notes = _summary(run / SUMMARY)
    candidates = [(step, path.name) for step, path in runfiles.generations(run)]
    skipped = []
    if (run / CHECKPOINT).exists():
        step = _final_step(run / CHECKPOINT, summary)
        if step is None:
            said = "summary.json describes another" if summary else "no readable summary.json says"
            skipped.append(Skipped(path=CHECKPOINT, reason=f"its step is unknown: {said}"))
        else:
            candidates.append((step, CHECKPOINT))
    candidates.sort(key=lambda c: (c[0], c[1] == CHECKPOINT), reverse=True)  # at one step: the final checkpoint
    points, refused = _checked(run, candidates, everything)
    if not points:
        raise SourceError(_nothing(run, [*skipped, *refused]))
    names = [name for _, name in candidates] + ([CHECKPOINT] if skipped else [])
    left_out = [name for name in names if name not in {p.path for p in points}]
    others = [name for name in left_out if name not in {s.path for s in (*skipped, *refused)}]
    files, links = _tree(run, run, {n for name in left_out for n in (name, f"{name}.sha256")})
    if others:
        notes = (*notes, f"other resume points not exported (--all exports them): {', '.join(others)}")
    return Source(
        run=run, kind=Kind.RUN, points=points, skipped=(*skipped, *refused), files=files, summary=summary,
        notes=(*notes, *links),
    )  # fmt: skip


def _verification(run: Path, everything: bool) -> Source:
    try:
        v = Verification.from_json(json.loads((run / VERIFICATION_JSON).read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise SourceError(f"{run / VERIFICATION_JSON}: unreadable ({one_line(err)})") from None
    if v.protocol == OBSERVED or not v.interrupt_at:
        why = "a verify --observe output" if v.protocol == OBSERVED else "it records no interruption point"
        raise SourceError(f"RUN {run}: {why}; export the run directory of the script instead")
    folders = {k: point_names(k, k == v.interrupt_at[0])[0] for k in v.interrupt_at}
    candidates = sorted(((k, f"{folders[k]}/{CHECKPOINT}") for k in folders), reverse=True)
    points, skipped = _checked(run, candidates, everything)
    if not points:
        raise SourceError(_nothing(run, skipped))
    try:
        reference = read_summary(run / CONTINUOUS / SUMMARY)
    except protocol.ProtocolError as err:
        raise SourceError(f"the continuous run holds the next update to compare with: {err}") from None
    summary, notes = _summary(run / points[0].path.split("/")[0] / SUMMARY)
    files = [VERIFICATION_JSON, f"{CONTINUOUS}/{SUMMARY}"]
    for point in points:
        found, links = _tree(run, run / point.path.split("/")[0], set())
        files, notes = [*files, *found], (*notes, *links)
    return Source(
        run=run, kind=Kind.VERIFICATION, points=points, skipped=tuple(skipped), files=tuple(files), summary=summary,
        reference=reference, verification=v, notes=notes,
    )  # fmt: skip


def _checked(run: Path, candidates: list[tuple[int, str]], everything: bool) -> tuple[tuple[Point, ...], list[Skipped]]:
    """Newest first, each through the verifier's own check; the first valid one only, unless `everything`."""
    points: list[Point] = []
    skipped: list[Skipped] = []
    for step, name in candidates:
        try:
            info = accept.checkpoint(run / name)
        except TrajectoryError as err:
            skipped.append(Skipped(path=name, reason=one_line(err)))
            continue
        is_dir = (run / name).is_dir()
        digests = {f"{name}/{n}": d for n, d in manifest.read(run / name).items()} if is_dir else {name: info.sha256}
        points.append(Point(path=name, step=step, sha256=info.sha256, digests=digests, directory=is_dir))
        if not everything:
            break
    return tuple(points), skipped


def _nothing(run: Path, skipped: list[Skipped]) -> str:
    if not skipped:
        return f"RUN {run}: no checkpoint (checkpoint.pt or step_NNNNNN.pt) to export"
    return f"RUN {run}: no valid checkpoint to export ({skipped[0].path}: {skipped[0].reason})"


def _final_step(final: Path, summary: Summary | None) -> int | None:
    """The step of checkpoint.pt: the summary's, unless the summary records the digest of another checkpoint
    (a process killed between its final checkpoint and its summary)."""
    if summary is None:
        return None
    recorded = summary.meta.get(protocol.META_CHECKPOINT_SHA256)
    try:
        text = fingerprint.sidecar_text(final)
    except fingerprint.FingerprintError:
        return summary.step  # its check refuses it, and says why
    on_disk = hashlib.sha256(text.encode()).hexdigest() if final.is_dir() else text[:64]
    return summary.step if recorded in (None, on_disk) else None


def _summary(path: Path) -> tuple[Summary | None, tuple[str, ...]]:
    if not path.exists():
        return None, ()
    try:
        return read_summary(path), ()
    except protocol.ProtocolError as err:
        return None, (f"{err}: copied as it is, not read",)


def _tree(run: Path, folder: Path, left: set[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The regular files under `folder` (relative to RUN) but the lock, temporaries and the names `left`; and a
    note for each link, not followed."""
    files, links = [], []
    for path in sorted(folder.rglob("*")):
        name = path.relative_to(run).as_posix()
        top = path.relative_to(folder).parts[0]
        if top in left or top == runfiles.LOCK or runfiles.TEMPORARY.fullmatch(path.name):
            continue
        if path.is_symlink():
            links.append(f"{name}: a link, not copied")
        elif path.is_file():
            files.append(name)
    return tuple(files), tuple(links)


def command(src: Source, given: str | None) -> Command:
    """The command that resumes src's points: `given` (--train-cmd), else the one the run recorded."""
    if given is not None:
        return Command(argv=tuple(shlex.split(given)), origin="--train-cmd")
    if src.verification is not None:
        key = "resume_cmd" if src.verification.resume_cmd else "train_cmd"
        recorded = src.verification.resume_cmd or src.verification.train_cmd
        return Command(argv=tuple(shlex.split(recorded)), origin=f"{VERIFICATION_JSON} {key}")
    argv = src.meta().get(protocol.META_ARGV)
    where = src.run / SUMMARY
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
        raise SourceError(f"{where}: records no command (meta.{protocol.META_ARGV}); pass --train-cmd")
    return Command(argv=_recorded(argv, where), origin=f"{SUMMARY} meta.{protocol.META_ARGV}")


def _recorded(argv: list[str], where: Path) -> tuple[str, ...]:
    """The recorded command line without the flags the export passes itself; a script run by this interpreter."""
    kept, skip = [], False
    for arg in argv[1:]:
        flag = arg.split("=", 1)[0]
        if skip or arg in BARE or flag in VALUED:
            skip = not skip and arg in VALUED  # `--flag value` drops the value too; `--flag=value` is one token
            continue
        kept.append(arg)
    script = Path(argv[0])
    if script.suffix != ".py":
        return (argv[0], *kept)
    if not script.is_file():
        raise SourceError(f"{where}: the recorded script {argv[0]} is not found from here; pass --train-cmd")
    return (sys.executable, "-B", str(script.resolve()), *kept)
