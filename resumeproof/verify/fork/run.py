"""One fork (docs/fork.md): give every branch its own copy of the checkpoint, run the control and the branches from
it as fresh processes, repeat the control where the original run does not already prove it deterministic, judge
(verify/fork/judge.py) and build the `Fork` that fork.json, the report and fork.png render.

The command line turns its outcome into an exit code (0 fair, 1 not fair, 2 could not complete).
"""

import shutil
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from rich.console import Console

from resumeproof.common import fingerprint, observation, protocol
from resumeproof.common.errors import ResumeproofError
from resumeproof.common.protocol import CONTROL, CONTROL_REPEAT
from resumeproof.verify.fork import judge as fork_judge
from resumeproof.verify.fork import original as fork_original
from resumeproof.verify.fork import report as fork_report
from resumeproof.verify.fork.original import Original
from resumeproof.verify.fork.plan import LOGS, ForkSettings
from resumeproof.verify.fork.result import BranchResult, Fork, Point
from resumeproof.verify.plan.trainer import OBSERVED
from resumeproof.verify.report import terminal
from resumeproof.verify.report.result import ran
from resumeproof.verify.run import accept
from resumeproof.verify.run.outputs import CheckpointInfo
from resumeproof.verify.run.trajectories import Trajectory, first_error, run_all
from resumeproof.verify.vocabulary.findings import Check

FORK_JSON, FORK_PNG = "fork.json", "fork.png"


@dataclass(frozen=True, kw_only=True)
class Judged:
    """What the branches' files and records showed."""

    fork_step: int
    continuation: int  # the original run's updates after the fork point the control was held to
    before: tuple[Point, ...]
    branches: tuple[BranchResult, ...]
    checks: tuple[Check, ...]

    def proven(self, steps: int) -> bool:
        """Fair, with the control's determinism shown by the original run itself over all its updates."""
        return self.continuation == steps and all(c.passed for c in self.checks)


def fork(s: ForkSettings, out: Console) -> Fork:
    source = _source(s.checkpoint)
    original = fork_original.read(s.checkpoint)
    _claim(s.output)
    (s.output / LOGS).mkdir()
    (s.output / OBSERVED).mkdir()
    copies = {b.name: _copy(s, b.name, source) for b in (s.control, *s.branches)}
    trajectories = [s.trajectory(b) for b in (s.control, *s.branches)]
    with terminal.live(out, trajectories) as shown:
        run_all(trajectories, s.jobs, s.timeout, accept.accept, shown)
    error, judged = first_error(trajectories), None
    if error is None:
        judged = _judge(s, original, trajectories)
        if not judged.proven(s.steps):  # determinism before anything is laid on an override
            copies[CONTROL_REPEAT] = _copy(s, CONTROL_REPEAT, source)
            trajectories.append(s.trajectory(s.repeat))
            with terminal.live(out, trajectories) as shown:
                run_all(trajectories, s.jobs, s.timeout, accept.accept, shown)
            error = first_error(trajectories)
            judged = _judge(s, original, trajectories) if error is None else None
    error = error or _unchanged(source, copies)
    result = _result(s, source, original, trajectories, judged if error is None else None, error)
    if result.error is None and s.plot:
        result = replace(result, plot=fork_report.png(s.output / FORK_PNG, result))
    result.write(s.output / FORK_JSON)
    return result


def _source(checkpoint: Path) -> CheckpointInfo:
    """The checkpoint every branch starts from, held to its sidecar and the weights_only check before anything runs."""
    try:
        return accept.checkpoint(checkpoint)
    except ResumeproofError as err:
        raise ResumeproofError(f"CHECKPOINT {err}") from None


def _claim(output: Path) -> None:
    """An output that holds anything is never merged into: it is absent, or an empty directory."""
    if output.is_symlink() or (output.exists() and not output.is_dir()):
        raise ResumeproofError(f"--output {output}: already exists and is no directory; refusing to touch it")
    held = sorted(p.name for p in output.iterdir()) if output.is_dir() else []
    if held:
        more = f" and {len(held) - 3} more" if len(held) > 3 else ""
        raise ResumeproofError(f"--output {output}: already holds {', '.join(held[:3])}{more}; refusing to touch it")
    output.mkdir(parents=True, exist_ok=True)


def _copy(s: ForkSettings, name: str, source: CheckpointInfo) -> CheckpointInfo:
    """The branch's own copy of the checkpoint, with its sidecar, held to the source's digest: the source is only
    read, and no branch can change what another resumes."""
    to = s.copy(name)
    to.parent.mkdir(parents=True)
    if source.path.is_dir():
        shutil.copytree(source.path, to, symlinks=True)
    else:
        shutil.copyfile(source.path, to)
    shutil.copyfile(fingerprint.sidecar(source.path), fingerprint.sidecar(to))
    copied = accept.checkpoint(to)
    if copied.sha256 != source.sha256:
        raise ResumeproofError(f"{to}: the copy's sha256 is not {source.path}'s; the source changed while copied")
    return copied


def _judge(s: ForkSettings, original: Original, trajectories: list[Trajectory]) -> Judged:
    summaries = {t.name: t.outcome.accepted.summary for t in trajectories if t.outcome.accepted is not None}
    seen = {t.name: observation.read_all(t.observe.record) for t in trajectories if t.observe is not None}
    control = summaries[CONTROL]
    k = max(0, fork_judge.fork_step(original, control, s.steps))
    parts = control.declared_parts or protocol.STANDARD_PARTS
    names = [CONTROL, *(b.name for b in s.branches)]
    checks = [fork_judge.continues(n, summaries[n], control, original, k, s.steps) for n in names]
    held = fork_judge.continuation(control, original, k, s.steps)
    checks += [held] if held is not None else []
    if CONTROL_REPEAT in summaries:
        again = (summaries[CONTROL_REPEAT], seen[CONTROL], seen[CONTROL_REPEAT])
        checks.append(fork_judge.determinism(control, *again, k, parts))
    branches = [BranchResult(name=CONTROL, overrides=(), curve=fork_judge.curve(control, k))]
    for b in s.branches:
        check, branch = fork_judge.branch(
            b.name, b.overrides, (control, seen[CONTROL]), (summaries[b.name], seen[b.name]), k, parts
        )
        checks.append(check)
        branches.append(branch)
    return Judged(
        fork_step=k,
        continuation=len(original.after(k, s.steps)),
        before=fork_judge.curve(control, 0, k),
        branches=tuple(branches),
        checks=tuple(checks),
    )


def _unchanged(source: CheckpointInfo, copies: dict[str, CheckpointInfo]) -> str | None:
    """A fork reads its checkpoint, and a branch its copy, never writes them: each hashed again."""
    if not source.unchanged():
        return f"CHECKPOINT {source.path}: changed during the fork"
    changed = [name for name, copy in copies.items() if not copy.unchanged()]
    return f"{changed[0]}: {copies[changed[0]].path} changed while it was resumed from" if changed else None


def _result(
    s: ForkSettings,
    source: CheckpointInfo,
    original: Original,
    trajectories: list[Trajectory],
    judged: Judged | None,
    error: str | None,
) -> Fork:
    found: dict[str, Any] = {f.name: getattr(judged, f.name) for f in fields(Judged)} if judged is not None else {}
    processes = {t.name: ran(t) for t in trajectories}
    return Fork(
        error=error,
        checkpoint=s.checkpoint,
        sha256=source.sha256,
        train_cmd=s.train_cmd,
        steps=s.steps,
        sources=original.sources,
        processes=processes,
        **found,
    )
