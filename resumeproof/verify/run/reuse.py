"""`verify --reuse-runs PREVIOUS`: a planned trajectory that an earlier verification ran the same way, from the same
code, is copied from it instead of run again (docs/observe.md, "Reusing runs").

The same way: the same name, done there, and the same run key (`key`: the command and the steps before it, the
observer's settings, the working directory, the environment and the launcher; each verification's output folder
read as `{output}`). The same code: every file the observer recorded the process loading (each module's file, the
script, each file its command line names; common/observation.py's SOURCES) still has the size and mtime_ns it had
(a stat each, as make does). Anything else runs again, and the reason is kept. A copy is checked by `accept` as a
run is: its checkpoint files, fingerprints and records.
"""

import hashlib
import json
import os
import re
import shutil
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from resumeproof.common import codec, observation
from resumeproof.common.errors import ResumeproofError
from resumeproof.common.observation import SUFFIX
from resumeproof.verify.run.launch import Launch, Placement
from resumeproof.verify.run.trajectories import Trajectory, TrajectoryError
from resumeproof.verify.vocabulary.status import Status

# Names that change between shells and test cases, not between runs of the same code.
VOLATILE = frozenset({"PWD", "OLDPWD", "SHLVL", "_", "PYTEST_CURRENT_TEST"})
OBSERVER = "RESUMEPROOF_OBSERVE"  # the prefix of the observer's variables (common/observation.py): a part of their own


class ReuseError(ResumeproofError):
    """--reuse-runs names no verification that can be read."""


@dataclass(frozen=True)
class Previous:
    root: Path  # the earlier verification's --output
    runs: dict[str, Any]  # its verification.json's trajectories, by name


def read(path: Path) -> Previous:
    """The verification in `path`, or a one-line error naming what is wrong with it."""
    said = f"--reuse-runs {path}"
    try:
        document = json.loads((path / "verification.json").read_text())
    except OSError:
        raise ReuseError(f"{said}: not a verification's output folder (no readable verification.json)") from None
    except ValueError as err:
        raise ReuseError(f"{said}: its verification.json is not JSON ({err})") from None
    runs = document.get("trajectories") if isinstance(document, dict) else None
    if not isinstance(runs, dict):
        raise ReuseError(f"{said}: its verification.json lists no trajectories")
    return Previous(path, runs)


def reuser(reuse_runs: Path | None, output: Path, launch: Launch) -> Callable[[Trajectory], bool]:
    """What `run_all` asks of each trajectory before it runs: its run key, recorded for a later verification, and
    with --reuse-runs, whether its run was copied from there (`reused_from`) or why not (`not_reused`)."""
    previous, copied = (read(reuse_runs) if reuse_runs else None), set[str]()

    def reused(t: Trajectory) -> bool:
        t.outcome.run_key = key(t, output, launch)
        if previous is None:
            return False
        if t.preempt is not None:  # its course (the preemption, the restart) is judged, and only a run has one
            t.outcome.not_reused = "a preempted job runs again: how Slurm preempted and restarted it is what is judged"
            return False
        ran_again = [name for name in t.after if name not in copied]  # its input is not the one it ran from there
        t.outcome.not_reused = f"{ran_again[0]} ran again" if ran_again else _why_not(previous, t, output)
        if t.outcome.not_reused is None:
            _copy(previous, t, output)
            copied.add(t.name)
        return t.outcome.not_reused is None

    return reused


def key(t: Trajectory, output: Path, launch: Launch) -> dict[str, str]:
    """What makes two runs of `t` the same run, each part as a sha256 of its JSON."""
    env = t.environment() or dict(os.environ)
    parts = {
        "command": [t.argv, *t.prepare, str(t.copy_of or "")],
        "observer": sorted((k, v) for k, v in env.items() if k.startswith(OBSERVER)),
        "environment": sorted((k, v) for k, v in env.items() if k not in VOLATILE and not k.startswith(OBSERVER)),
        "working directory": os.getcwd(),
        "launcher": asdict(launch),
    }
    root = re.compile(re.escape(str(output)) + r"(?![\w.-])")  # /runs/a in /runs/a/continuous, never /runs/ab
    return {part: hashlib.sha256(root.sub("{output}", json.dumps(v)).encode()).hexdigest() for part, v in parts.items()}


def _why_not(previous: Previous, t: Trajectory, output: Path) -> str | None:
    """None where PREVIOUS ran `t` the same way from the same code, else why it runs again."""
    ran = previous.runs.get(t.name)
    if not isinstance(ran, dict) or ran.get("status") != Status.DONE:
        return "not done there"
    before = ran.get("run_key")
    if not isinstance(before, dict):
        return "no run key recorded there (an earlier resumeproof)"
    differs = [part for part, digest in (t.outcome.run_key or {}).items() if before.get(part) != digest]
    if differs:
        return f"its {differs[0]} differs"
    if t.observe is None:
        return "not watched by the observer: nothing shows its code unchanged"
    there = _moved(previous, t.observe.record, output)
    records = [observation.record_file(there, None), *sorted(there.parent.glob(f"{there.name}.rank-*{SUFFIX}"))]
    records = [r for r in records if r.exists()]
    if not records:
        return "no observer record there"
    return next(filter(None, map(_changed, records)), None)


def _changed(record: Path) -> str | None:
    """Why the code a record's process loaded is not the code here now, or None where every file is as it was."""
    try:
        sources = json.loads(record.read_text()).get(observation.SOURCES)
    except (OSError, ValueError, AttributeError):
        sources = None
    if not isinstance(sources, dict) or not sources:
        return f"{record.name} names no source files (an earlier observer)"
    for path, seen in sorted(sources.items()):
        try:
            now = [(stat := os.stat(path)).st_size, stat.st_mtime_ns]
        except OSError:
            now = None
        if seen is None or now != seen:
            return f"{_shown(path)} {'is gone' if now is None else 'changed'} since"
    return None


def _shown(path: str) -> str:
    here = Path.cwd()
    return str(Path(path).relative_to(here)) if Path(path).is_relative_to(here) else path


def _moved(previous: Previous, path: Path, output: Path) -> Path:
    """Where `path`, under this verification's --output, was in PREVIOUS."""
    return previous.root / path.relative_to(output)


def _copy(previous: Previous, t: Trajectory, output: Path) -> None:
    """PREVIOUS's folder, log and records of `t` into place, each under a temporary name first, then renamed."""
    assert t.observe is not None
    record = t.observe.record
    copied = [(_moved(previous, t.output, output), t.output), (_moved(previous, t.log, output), t.log)]
    copied += [(f, record.parent / f.name) for f in _moved(previous, record, output).parent.glob(f"{record.name}.*")]
    try:
        for source, target in copied:
            if source.exists():
                temporary = target.with_name(f".{target.name}.reused")
                (shutil.copytree if source.is_dir() else shutil.copy2)(source, temporary)
                os.replace(temporary, target)
    except OSError as err:
        raise TrajectoryError(f"copying its run from {previous.root}: {err}") from None
    ran = previous.runs[t.name]
    t.outcome.exit_code = ran.get("exit_code")
    t.outcome.placement = codec.decode(Placement | None, ran.get("ran_on"), "ran_on")
    t.outcome.reused_from = previous.root
