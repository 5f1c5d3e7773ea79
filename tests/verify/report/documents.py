"""Representative result objects, one of each document the verifier writes (verification.json: a passing one, a
failing one, one that could not complete; fork.json, chaos.json, EXPORT.json, `check --json`'s entries), shared by
tests/verify/report/test_result.py. Their documents as the hand-written to_json methods wrote them are kept in
tests/data/documents/: `python -B -m tests.verify.report.documents` writes them again."""

import math
from pathlib import Path

from resumeproof.common import codec, protocol
from resumeproof.common.checkpoint_files import FileInfo
from resumeproof.common.protocol import CheckId, CheckKind
from resumeproof.verify.chaos.result import ChaosResult, Kill
from resumeproof.verify.export.result import Copied, Export, ExportCheck
from resumeproof.verify.export.source import Command, Kind, Skipped
from resumeproof.verify.export.source import Point as ExportPoint
from resumeproof.verify.fork.result import BranchResult, Fork, Point
from resumeproof.verify.report.result import CheckedCheckpoint, StartedFrom, TrajectoryRecord, Verification
from resumeproof.verify.run.launch import Placement
from resumeproof.verify.run.launch.job import Start
from resumeproof.verify.run.launch.preempt import Preempted
from resumeproof.verify.run.vet import Verdict, Vetted
from resumeproof.verify.vocabulary.band import Band
from resumeproof.verify.vocabulary.findings import (
    AT_RESTORE,
    CONCORDANT,
    DIRECT,
    DIVERGENT,
    WITHIN_SPREAD,
    Check,
    Coverage,
    Determinism,
    Diagnosis,
    Fault,
    Resume,
)

DOCUMENTS = Path(__file__).resolve().parents[2] / "data" / "documents"

LOST_OPTIMIZER = Diagnosis(
    lost=("optimizer", "scheduler"),
    rule=DIRECT,
    step=6,
    evidence="state.optimizer.state.0.exp_avg: 0.1 vs 0.30000000000000004",
    explanation="the optimizer's moments were not restored",
)
UNKNOWN = Diagnosis(lost=(), rule="outside-spread", step=None, evidence="", explanation="no part is named")
ENVELOPE = {1: {"loss": 1e-7, "lr": None}, 2: {"loss": 3e-7, "lr": 0.0}}
BAND = Band(runs=("continuous", "repeat"), updates=ENVELOPE, end={"w": 0.5})
FILE = FileInfo(path="model.pt", sha256="a" * 64, kind="torch", tensors=3, globals=("collections.OrderedDict",))
PLACED = Placement(launcher="slurm", host="n1", job_id="42", attempts=1, devices="0", node="n1")
PREEMPTED = Preempted(
    how="SIGNAL",
    signal="B:USR1@90",
    at=5,
    job_id="43",
    delivered_after=5,
    state="COMPLETED",
    restarts=1,
    exit_code=0,
    starts=(Start("n1", "0", "n1", "0", ""), Start("n2", "", "n2", "1", "77")),
    holds=("released",),
    stopped_after=5,
    stopped_by="USR1",
    requeued_itself=True,
    resumed_from=(5,),
)


def record(**given) -> TrajectoryRecord:
    plain = {"argv": ("python", "train.py"), "status": "done", "exit_code": 0, "wall_seconds": 1.25}
    kept = {"checkpoint_sha256": "b" * 64, "checkpoint_files": (FILE,), "log": "runs/x/log", "error": None}
    return TrajectoryRecord(**{**plain, **kept, **given})


def check(kind: CheckKind, passed: bool = True, **given) -> Check:
    trajectory, part = given.pop("trajectory", "resumed"), given.pop("part", None)
    return Check(id=CheckId(kind=kind, trajectory=trajectory, part=part), name=f"{kind} check", passed=passed, **given)


def resume(verdict: str = CONCORDANT, **given) -> Resume:
    plain = {"max_state_deviation": 0.0, "max_deviation": 0.0, "final_mse": 0.25, "mse_deviation": 0.0}
    return Resume(**{"verdict": verdict, **plain, "mismatches": 0, "first_mismatch": None, "diagnosis": None, **given})


def fault(**given) -> Fault:
    plain = {"detected": True, "cause": "omit optimizer", "caught_by": ("history", "state"), "first_mismatch": "x"}
    plain |= {"max_deviation": 0.5, "mismatches": 3, "diagnosis": LOST_OPTIMIZER, "identical_to_full_resume": False}
    return Fault(**{**plain, **given})


def header(**given) -> Verification:
    plain = {"error": None, "train_cmd": "python train.py --steps {steps}", "resume_cmd": None, "protocol": "p/1"}
    plain |= {"steps": 10, "interrupt_at": (5, 7), "segments": ((3, 6),), "atol": 1e-12}
    plain |= {"allowed": {"unsafe_pickle": ["*.pkl"], "opaque": []}, "environment": {"python": "3.11", "n": 2}}
    return Verification(**{**plain, **given})


def passed() -> Verification:
    """Every check passed, every optional part of the document there."""
    trajectories = {
        "continuous": record(ran_on=PLACED, run_key={"argv": "x"}, reused_from="runs/old", stopped_after=5),
        "interrupted": record(check=CheckedCheckpoint("runs/x/ck", "accepted", "runs/x/ck: accepted")),
        "resumed": record(started_from=StartedFrom(checkpoint="c.pt", copy_of=None, sha256="c" * 64)),
        "preempted": record(preemption=PREEMPTED, not_reused="its sources changed", exit_code=None),
    }
    checks = [
        check(CheckKind.CHECKPOINT, trajectory="interrupted"),
        check(CheckKind.PREFIX, max_abs_diff=0.0, trajectory="interrupted"),
        check(CheckKind.RESUME, max_abs_diff=0.0, resumed_at=5),
        check(CheckKind.NEGATIVE_CONTROL, trajectory="resumed-no-rng", diagnosis=UNKNOWN, first_update=6),
        check(CheckKind.FAULT, trajectory="fault-optimizer", part="optimizer", diagnosis=LOST_OPTIMIZER),
        check(CheckKind.FAULT, trajectory="fault-scheduler", part="scheduler", not_applicable="never called step"),
    ]
    faults = {
        "optimizer": fault(),
        "scheduler": fault(detected=False, diagnosis=None, not_applicable="never called step", caught_by=()),
    }
    judged = {"resumes": {"resumed": resume(), "resumed@7": resume(max_state_deviation=None)}}
    judged |= {"negative": resume(DIVERGENT, mismatches=4, first_mismatch="history[5].loss", diagnosis=UNKNOWN)}
    judged |= {"determinism": Determinism(repeated=True, deterministic=True), "parts": ("model", "optimizer")}
    judged |= {"coverage": Coverage(epoch_rows=24, epoch_boundaries=(6, 12), untried_boundaries=(12,))}
    return header(
        trajectories=trajectories,
        checks=checks,
        faults=faults,
        nonfinite=("state.x",),
        next_lr=0.1 + 0.2,
        plot="runs/x/plot.png",
        continuous_made=11,
        **judged,
    )


def failed() -> Verification:
    """A resume that lost the optimizer, a fault not caught, a trainer judged within its measured spread."""
    lost = resume(DIVERGENT, max_deviation=0.5, mismatches=2, first_mismatch="state.w", diagnosis=LOST_OPTIMIZER)
    checks = [
        check(CheckKind.RESTORE, False, max_abs_diff=math.inf, first_mismatch="state.w", diagnosis=LOST_OPTIMIZER),
        check(CheckKind.RESUME, False, detail="outside", diagnosis=Diagnosis(**{**vars(UNKNOWN), "rule": AT_RESTORE})),
        check(CheckKind.FAULT, False, trajectory="fault-rng", part="rng"),
        check(CheckKind.DETERMINISM, trajectory="continuous-repeat", detail="differs at 3"),
    ]
    differs = {"first_step": 3, "first_mismatch": "loss", "detail": "d", "spread": BAND}
    spread = Determinism(repeated=True, deterministic=False, **differs)
    return header(
        resume_cmd="python train.py --resume {checkpoint}",
        trajectories={"continuous": record(), "resumed": record(status="failed", exit_code=1, error="boom")},
        checks=checks,
        resumes={"resumed": lost, "resumed@7": resume(WITHIN_SPREAD)},
        negative=resume(DIVERGENT, identical_to_full_resume=True),
        faults={"rng": fault(detected=False, diagnosis=None, caught_by=())},
        determinism=spread,
        next_lr=0.5,
    )


def incomplete() -> Verification:
    """It could not complete: no comparison, no coverage, the defaults everywhere."""
    return header(error="continuous: exited with status 2", trajectories={"continuous": record(status="failed")})


def fork() -> Fork:
    control = BranchResult(name="control", overrides=(), curve=(Point(step=4, loss=0.5, lr=0.1),))
    low = BranchResult(name="low", overrides=("--lr", "0.01"), parts_at=4, parted_by="history[3].lr: 0.01 vs 0.1")
    low = BranchResult(**{**vars(low), "curve": (Point(step=4, loss=0.25, lr=0.01),), "first_difference": "lr"})
    return Fork(
        error=None,
        checkpoint=Path("runs/a/checkpoint.pt"),
        sha256="d" * 64,
        train_cmd="python train.py",
        steps=2,
        fork_step=3,
        sources=("runs/a/summary.json",),
        continuation=1,
        before=(Point(step=3, loss=0.75, lr=0.1),),
        branches=(control, low),
        checks=(check(CheckKind.CONTINUES, trajectory="low"), check(CheckKind.INPUTS, False, trajectory="low")),
        processes={"control": record(), "low": record(ran_on=PLACED)},
        plot=Path("runs/f/fork.png"),
    )


def chaos() -> ChaosResult:
    kills = (Kill(signal="SIGKILL", phase="save", step=3), Kill(signal="SIGTERM", phase="update", step=5))
    return ChaosResult(
        checks=(check(CheckKind.CHAOS, trajectory=None), check(CheckKind.CHAOS, False, detail="lost an update")),
        first_mismatch="history[4].loss",
        kills=kills,
        trainer_starts=3,
        replayed_steps=2,
        broken_log_lines=0,
        kills_without_valid_generation=(1,),
        settings={"kills": 2, "seed": 0},
    )


def export() -> Export:
    point = ExportPoint(path="step_000006.pt", step=6, sha256="e" * 64, digests={"step_000006.pt": "e" * 64})
    return Export(
        id="20261207-1",
        created="2026-12-07T17:00:00Z",
        command="resumeproof export runs/a s3://b",
        run="/work/runs/a",
        kind=Kind.RUN,
        destination="s3://b/",
        replaces=None,
        points=(point, ExportPoint(path="dcp", step=3, sha256="f" * 64, digests={}, directory=True)),
        skipped=(Skipped(path="step_000009.pt", reason="truncated"),),
        notes=("a link not copied",),
        files=(Copied(path="step_000006.pt", size=1024, sha256="e" * 64),),
        trainer=Command(argv=("python", "train.py"), origin="--train-cmd"),
        recorded={"config": {"lr": 0.1}},
        exporter={"resumeproof": "0.2.0"},
        checks=(ExportCheck(kind=CheckKind.COPY, name="copy", passed=True, path="step_000006.pt"),),
        logs="/tmp/logs",
    )


def vetted() -> list[Vetted]:
    refused = Vetted(path=Path("x.pt"), verdict=Verdict.REFUSED, kind="file", reason="a pickle that imports os")
    accepted = Vetted(path=Path("ck"), verdict=Verdict.ACCEPTED, kind="directory", tensors=3, sidecar=True)
    return [refused, Vetted(**{**vars(accepted), "files": (FILE,)})]


def written() -> dict[str, str]:
    """Each document's name and its text, as the writing API writes it."""
    documents = {f"verification-{name}": make().to_json() for name, make in VERIFICATIONS.items()}
    documents |= {"fork": fork().to_json(), "chaos": chaos().to_json(), "vetted": codec.encode(vetted())}
    texts = {name: protocol.dumps(document) for name, document in documents.items()}
    return texts | {"export": export().document().decode()}


VERIFICATIONS = {"passed": passed, "failed": failed, "incomplete": incomplete}

if __name__ == "__main__":
    DOCUMENTS.mkdir(parents=True, exist_ok=True)
    for name, text in written().items():
        (DOCUMENTS / f"{name}.json").write_text(text, encoding="utf-8")
