"""Which trajectories a verification runs, and what each one must show against the continuous run.

Every trajectory is a fresh process of the training command. Besides the four of the protocol
(continuous, interrupted, resumed, resumed-no-rng), a verification can add an interrupted and
resumed pair for every interruption point, chains of segments, a continuous run that writes a
checkpoint after every step, and one resume per deliberately omitted part (the fault matrix).
Each added trajectory comes with its expectation: a history prefix, concordance, or divergence.
"""

import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from resumeproof.common import protocol
from resumeproof.verify.compare import Comparison, compare, compare_keys, merge
from resumeproof.verify.trajectories import Trajectory

CONTINUOUS, INTERRUPTED, RESUMED, RESUMED_NO_RNG = "continuous", "interrupted", "resumed", "resumed-no-rng"
CADENCE = "continuous-every-1"  # writes a checkpoint after every step: must not disturb the run
FAULT_PARTS = ("model", "optimizer", "scheduler", "rng-python", "rng-numpy", "rng-torch", "data", "progress")
FLAT = "flat"  # --faults flat: resume from the classic flat file of weights and Adam moments alone
FLAT_EXPORT = "flat-export"  # the process that writes it from the interrupted checkpoint
FLAT_CAUSE = (
    "weights and Adam moments only, in float32: no scheduler, generators, data position, step counter or history"
)
PREFIX, CONCORDANT, DIVERGENT = "prefix", "concordant", "divergent"


@dataclass(frozen=True, kw_only=True)
class Settings:
    output: Path  # run directory of this verification; must not exist
    steps: int  # N: updates of the continuous run
    points: tuple[int, ...]  # interruption points k, the primary one first
    atol: float  # absolute tolerance, no relative one
    train_cmd: str  # command line the protocol flags are appended to
    jobs: int  # processes at once
    timeout: float  # seconds per trajectory before it is killed
    torch_load: bool = False  # also load every checkpoint with torch.load(weights_only=True)
    faults: tuple[str, ...] = ()  # parts to omit, one resume each
    segments: tuple[tuple[int, ...], ...] = ()  # chains: updates per process, summing to N
    cadence: int = 0  # also run continuous with --checkpoint-every CADENCE (0: no)
    plot: bool = False  # write verification.png

    @property
    def primary(self) -> int:
        """The point the negative control and the faults resume from."""
        return self.points[0]


@dataclass(frozen=True)
class Expectation:
    name: str  # the trajectory
    kind: str  # PREFIX: its history is the continuous one's first `steps`; CONCORDANT; DIVERGENT
    check: str  # what verification.json calls the check
    steps: int = 0
    part: str | None = None  # for a fault: the part it omits


@dataclass
class Plan:
    trajectories: list[Trajectory]
    expectations: list[Expectation]
    steps: dict[str, int | None]  # the step each summary must report (None: a fault may report any)


def build(s: Settings) -> Plan:
    plan = Plan([], [], {})

    def add(name: str, steps: int, total: int | None, extra: Sequence[str] = (), after: str | None = None) -> None:
        argv = [*shlex.split(s.train_cmd), "--steps", str(steps), "--output", str(s.output / name), *extra]
        plan.trajectories.append(
            Trajectory(name, argv, s.output / name, s.output / "logs" / f"{name}.log", (after,) if after else ())
        )
        plan.steps[name] = total

    def resume(name: str) -> list[str]:
        return ["--resume", str(s.output / name / protocol.CHECKPOINT)]

    add(CONTINUOUS, s.steps, s.steps)
    for k in s.points:
        interrupted, resumed = _point_names(k, k == s.primary)
        add(interrupted, k, k)
        add(resumed, s.steps - k, s.steps, resume(interrupted), interrupted)
        plan.expectations += [
            Expectation(interrupted, PREFIX, f"{interrupted}: history = first {k} records of continuous", k),
            Expectation(resumed, CONCORDANT, f"{resumed} (from step {k}) concordant with continuous"),
        ]
    primary = _point_names(s.primary, True)[0]
    add(RESUMED_NO_RNG, s.steps - s.primary, s.steps, [*resume(primary), "--omit-rng-restore"], primary)
    plan.expectations.append(
        Expectation(RESUMED_NO_RNG, DIVERGENT, "resume without RNG restore diverges (negative control)")
    )
    for part in s.faults:
        name = f"fault-{part}"
        if part == FLAT:
            flat = s.output / FLAT_EXPORT / "flat.bin"
            export = [sys.executable, "-B", "-m", "resumeproof.kit.flat", "export", resume(primary)[1], str(flat)]
            plan.trajectories.append(
                Trajectory(FLAT_EXPORT, export, flat.parent, s.output / "logs" / "flat-export.log", (primary,))
            )
            add(name, s.steps - s.primary, None, ["--resume-flat", str(flat)], FLAT_EXPORT)
        else:
            add(name, s.steps - s.primary, None, [*resume(primary), "--omit", part], primary)
        plan.expectations.append(Expectation(name, DIVERGENT, f"resume without {part} diverges", part=part))
    for c, chain in enumerate(s.segments, start=1):
        done, before = 0, None
        for j, steps in enumerate(chain, start=1):
            name, done = f"chain{c}-seg{j}", done + steps
            add(name, steps, done, resume(before) if before else [], before)
            label = f"chain {','.join(map(str, chain))} segment {j}"
            if done < s.steps:
                plan.expectations.append(Expectation(name, PREFIX, f"{label}: history = first {done} records", done))
            else:
                plan.expectations.append(Expectation(name, CONCORDANT, f"{label} concordant with continuous"))
            before = name
    if s.cadence:
        add(CADENCE, s.steps, s.steps, ["--checkpoint-every", str(s.cadence)])
        plan.expectations.append(Expectation(CADENCE, CONCORDANT, "writing a checkpoint every step changes nothing"))
    return plan


def _point_names(k: int, primary: bool) -> tuple[str, str]:
    """The primary point keeps the protocol's plain names; every other point is suffixed with its k."""
    return (INTERRUPTED, RESUMED) if primary else (f"{INTERRUPTED}-{k}", f"{RESUMED}-{k}")


# -- evaluation ---------------------------------------------------------------------------------


def evaluate(s: Settings, plan: Plan, summaries: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Check every expectation against the continuous run; the verdict part of verification.json."""
    cont = summaries[CONTINUOUS]
    checks, entries, faults = [], {}, {}
    for e in plan.expectations:
        other = summaries[e.name]
        if e.kind == PREFIX:
            result = compare(other["history"], cont["history"][: e.steps], s.atol, "history")
            checks.append(_check(e.check, result.concordant, result))
            continue
        parts = compare_keys(cont, other, protocol.COMPARED_KEYS, s.atol)
        result = merge(parts.values())
        passed = result.concordant == (e.kind == CONCORDANT)
        checks.append(_check(e.check, passed, result))
        if e.part is None:
            entries[e.name] = _entry(cont, other, result, parts["state"])
        else:
            faults[e.part] = {
                "detected": passed,
                "cause": FLAT_CAUSE if e.part == FLAT else f"{e.part} not restored",
                "caught_by": sorted(result.caught_by),
                "first_mismatch": result.first_path,
                "max_deviation": result.max_abs_diff,
                "mismatches": result.count,
            }
    positive = [c for c, e in zip(checks, plan.expectations, strict=True) if e.kind != DIVERGENT]
    return {
        "all_checks_passed": all(c["passed"] for c in checks),
        "positive": all(c["passed"] for c in positive),
        "negative_divergence_detected": entries[RESUMED_NO_RNG]["verdict"] == "divergent",
        "checks": checks,
        "comparison": {
            "full_resume": entries[RESUMED],
            "no_rng_resume": entries[RESUMED_NO_RNG],
            "resumes": {name: entry for name, entry in entries.items() if name != RESUMED_NO_RNG},
        },
        "faults": faults,
        "blind_to": [part for part, fault in faults.items() if not fault["detected"]],
        "next_lr": cont["next"]["lr"],
    }


def _check(name: str, passed: bool, comparison: Comparison) -> dict[str, Any]:
    first = comparison.mismatches[0] if comparison.mismatches else None
    return {
        "name": name,
        "passed": passed,
        "max_abs_diff": comparison.max_abs_diff,
        "first_mismatch": first.path if first else None,
        "detail": first.reason if first else None,
    }


def _entry(continuous: dict, other: dict, full: Comparison, state: Comparison) -> dict[str, Any]:
    """How far a resume lands from the continuous run."""
    mse, reference = _mse(other), _mse(continuous)
    numbers = protocol.is_number(mse) and protocol.is_number(reference)
    return {
        "verdict": "concordant" if full.concordant else "divergent",
        "max_state_deviation": state.max_abs_diff,
        "max_deviation": full.max_abs_diff,
        "final_mse": mse if protocol.is_number(mse) else None,
        "mse_deviation": abs(mse - reference) if numbers else None,
        "mismatches": full.count,
        "first_mismatch": full.first_path,
    }


def _mse(summary: dict[str, Any]) -> Any:
    """eval.mse where the trainer reports one (eval may be any JSON tree)."""
    return summary["eval"].get("mse") if isinstance(summary["eval"], dict) else None
