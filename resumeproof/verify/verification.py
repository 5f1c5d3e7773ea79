"""One verification: run the planned trajectories, accept what they wrote, compare, write verification.json.

The outcome is the verification.json document; the command line turns it into an exit code
(0 passed, 1 a comparison failed, 2 could not complete).
"""

from dataclasses import replace
from typing import Any

from rich.console import Console
from rich.live import Live

from resumeproof.common import protocol
from resumeproof.common.errors import refuse_existing
from resumeproof.verify import accept, plan, points, report
from resumeproof.verify import plot as plot_module
from resumeproof.verify.accept import Accepted
from resumeproof.verify.evaluate import evaluate
from resumeproof.verify.expectation import Expect
from resumeproof.verify.settings import Settings, primary_first
from resumeproof.verify.trajectories import SKIPPED, Trajectory, TrajectoryError, run_all


def verify(s: Settings, out: Console) -> dict[str, Any]:
    refuse_existing(s.output)
    (s.output / "logs").mkdir(parents=True)
    s, trajectories, error = _planned(s, out)
    if error is None:
        _run(trajectories, s, out)
        error = next((t.error for t in trajectories if t.error and t.status != SKIPPED), None)
    if error is None:
        error = _inputs_unchanged(trajectories) or (_torch_load_all(trajectories) if s.torch_load else None)
    done = {t.name: t.accepted for t in trajectories if isinstance(t.accepted, Accepted)}
    summaries = {name: a.summary for name, a in done.items()}
    meta = summaries.get(plan.CONTINUOUS, {}).get("meta")
    document: dict[str, Any] = {
        "all_checks_passed": False,
        "positive": False,
        "negative_divergence_detected": False,
        "error": error,
        "protocol": protocol.PROTOCOL,
        "train_cmd": s.train_cmd,
        "resume_cmd": s.resume_cmd,
        "steps": s.steps,
        "interrupt_at": list(s.points),
        "segments": [list(chain) for chain in s.segments],
        "tolerance": {"atol": s.atol, "rtol": 0.0},
        "allowed": {"unsafe_pickle": list(s.allow.unsafe_pickle), "opaque": list(s.allow.opaque)},
        "environment": report.environment(meta if isinstance(meta, dict) else {}),  # meta: any JSON
        "trajectories": {t.name: report.trajectory_entry(t) for t in trajectories},
        "checks": [],
        "comparison": {},
        "faults": {},
        "blind_to": [],
        "coverage": {},
        "next_lr": None,
    }
    if error is None:
        document.update(evaluate(trajectories, summaries, s.atol))
        document["checks"] = [a.checkpoint.row(name) for name, a in done.items()] + document["checks"]
        if s.plot:
            divergent = {t.name for t in trajectories if t.expectation and t.expectation.kind is Expect.DIVERGENT}
            document["plot"] = str(plot_module.write(s.output / "verification.png", summaries, s.atol, divergent))
    report.write(s.output / "verification.json", document)
    return document


def _planned(s: Settings, out: Console) -> tuple[Settings, list[Trajectory], str | None]:
    """The plan; with --interrupt-at epochs, the continuous run goes first and its history gives the points."""
    if not s.infer_points:
        return s, plan.build(s), None
    continuous = plan.reference(s)
    _run([continuous], s, out)
    if continuous.error is not None:
        return s, [continuous], continuous.error
    try:
        found = points.infer(continuous.accepted.summary["history"]).points(s.steps)
    except points.EpochError as err:
        return s, [continuous], f"--interrupt-at epochs: {err}"
    s = replace(s, points=primary_first(found))
    return s, plan.build(s, continuous), None


def _run(trajectories: list[Trajectory], s: Settings, out: Console) -> None:
    with Live(report.progress(trajectories), console=out, refresh_per_second=8) as live:
        run_all(
            trajectories,
            s.jobs,
            s.timeout,
            accept.acceptor(s.allow),
            lambda: live.update(report.progress(trajectories)),
        )
    if not out.is_terminal:
        out.line()  # Live ends its last line only on a terminal


def _inputs_unchanged(trajectories: list[Trajectory]) -> str | None:
    """A resume must read its checkpoint, never write it: re-hash every one resumed from."""
    resumed_from = {name for t in trajectories for name in t.after}
    for t in trajectories:
        if t.name in resumed_from and isinstance(t.accepted, Accepted) and not t.accepted.checkpoint.unchanged():
            return f"{t.accepted.checkpoint.path}: changed while it was being resumed from"
    return None


def _torch_load_all(trajectories: list[Trajectory]) -> str | None:
    """Load every checkpoint with torch itself; the first refusal, if any."""
    for t in trajectories:
        if isinstance(t.accepted, Accepted):
            try:
                t.accepted = replace(t.accepted, checkpoint=accept.with_torch(t.accepted.checkpoint))
            except TrajectoryError as err:
                t.error = f"{t.name}: {err}"
                return t.error
    return None
