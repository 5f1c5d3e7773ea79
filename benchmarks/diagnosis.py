"""The diagnosis corpus: realistic resume bugs, each beside its correct control, verified and scored by cause.

    python -B benchmarks/diagnosis.py [--jobs 2] [--only NAME[,NAME...]] [--json OUT] [--keep DIR]

Every case is one `verify_resume.py` run of a trainer in `tests/trainers/corpus/` (a user's loop
with one resume bug chosen by `--bug`, or the same loop resumed correctly). A case is scored twice:

- its **verdict** is right when the verifier exits as the case expects (0 pass, 1 a comparison
  failed, 2 could not complete);
- its **diagnosis** is *right* when it names exactly the true cause (one of `CASES[i].right`),
  *vague* when it names no part ("unknown", or nothing at all), *wrong* when it names a part that
  is not the cause, or blames lost state for non-determinism or for a negative control without
  power. For a control (true cause "none") a diagnosis that names a part is wrong, and no
  diagnosis at all is right. With `--faults`, every fault run is scored too (right when its
  diagnosis names exactly the part it omitted; a fault that did not run is vague), and the case
  is only as right as its worst fault.

`verification.json` is read into the package's typed result (`resumeproof.verify.result`): each
check by its kind and each diagnosis by its rule and parts. Trainers run with PYTHONHASHSEED
unset (two of them depend on the hash seed on purpose). Prints one line per case as it ends,
then the per-case table and the counts in Markdown (for docs/checks.md); `--json` writes both.
"""

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from resumeproof.common.protocol import CheckKind
from resumeproof.verify.findings import Check
from resumeproof.verify.result import Verification

REPO = Path(__file__).resolve().parent.parent
CORPUS = "tests/trainers/corpus"

NONE, NOT_DETERMINISTIC, NO_POWER = "none", "not-deterministic", "no-power"  # the causes that are not a part
UNKNOWN = "unknown"  # a diagnosis that names no part
RIGHT, VAGUE, WRONG = "right", "vague", "wrong"


@dataclass(frozen=True, kw_only=True)
class Case:
    """One corpus entry: a trainer, how it is verified, and what a perfect verifier says about it."""

    name: str  # "<family>/<variant>", unique
    script: str  # file in tests/trainers/corpus/
    args: tuple[str, ...] = ()  # the trainer's own flags: --bug NAME, ...
    verify: tuple[str, ...] = ()  # extra verify_resume.py flags: --faults all, --interrupt-at 7, ...
    exit: int  # the right verdict: 0 passed, 1 a comparison failed, 2 could not complete
    cause: str  # the part (the trainer's own name) whose state the resume lost, or NONE, NOT_DETERMINISTIC, NO_POWER
    right: frozenset[str] = frozenset()  # a part cause's right diagnoses (default: the cause); may hold UNKNOWN
    faults: tuple[str, ...] = ()  # with --faults: the parts whose fault runs must each be diagnosed by their own name
    why: str  # what the trainer does wrong (or right), one line

    def __post_init__(self) -> None:
        if self.exit not in (0, 1, 2):
            raise ValueError(f"{self.name}: exit must be 0, 1 or 2, not {self.exit}")
        if not (REPO / CORPUS / self.script).is_file():
            raise ValueError(f"{self.name}: script {CORPUS}/{self.script} does not exist")
        if self.cause in (NONE, NOT_DETERMINISTIC, NO_POWER) and self.right:
            raise ValueError(f"{self.name}: right is only for a part cause, not {self.cause!r}")
        if self.cause == NONE and self.exit != 0:
            raise ValueError(f"{self.name}: a control (cause 'none') must expect exit 0")
        if self.faults and "--faults" not in self.verify:
            raise ValueError(f"{self.name}: faults are scored only when --faults is passed")

    @property
    def family(self) -> str:
        return self.name.split("/")[0]

    @property
    def is_control(self) -> bool:
        return self.cause == NONE

    @property
    def right_parts(self) -> frozenset[str]:
        """The part names a right diagnosis may name (UNKNOWN aside)."""
        if self.cause in (NONE, NOT_DETERMINISTIC, NO_POWER):
            return frozenset()
        return (self.right or frozenset({self.cause})) - {UNKNOWN}

    def train_cmd(self, python: str = "python") -> str:
        return shlex.join([python, "-B", f"{CORPUS}/{self.script}", *self.args])


def _bug(script: str, bug: str, cause: str, why: str, **more: Any) -> Case:
    family = script.removesuffix(".py")
    return Case(name=f"{family}/{bug}", script=script, args=("--bug", bug), exit=1, cause=cause, why=why, **more)


def _control(script: str, why: str, variant: str = "fixed", **more: Any) -> Case:
    family = script.removesuffix(".py")
    return Case(name=f"{family}/{variant}", script=script, exit=0, cause=NONE, why=why, **more)


OWN_PARTS = ("net", "opt", "ema", "scaler", "order", "rng-shuffle", "rng-aug", "rng-dropout")

CASES: tuple[Case, ...] = (
    # 1. DataLoader workers: the loader generator decides the permutation and the workers' seeds
    _bug("dataloader_workers.py", "lose-loader-generator", "rng-loader", "epoch and batch saved, loader generator not"),
    _control("dataloader_workers.py", "the loader generator saved as the epoch's iterator started"),
    # 2. torchdata's StatefulDataLoader
    _bug("stateful_loader.py", "lose-loader", "loader", "StatefulDataLoader.state_dict() not saved"),
    _bug(
        "stateful_loader.py",
        "loader-state-only",
        "loader",
        "state_dict() saved and loaded as documented: the restore is one draw of its generator behind",
    ),
    _control("stateful_loader.py", "state_dict() and the shuffle generator's live state, set after iter()"),
    # 3. gradient accumulation
    _bug("grad_accum.py", "lose-micro-step", "micro-step", "update count saved, micro-step counter not"),
    _control("grad_accum.py", "micro-step counter saved"),
    # 4. EMA of the weights
    _bug("ema.py", "lose-ema", "ema", "EMA not saved: a fresh average from the restored weights"),
    _bug("ema.py", "lose-ema-updates", "ema", "EMA weights saved, its update counter (decay warm-up) not"),
    _control("ema.py", "EMA weights and counter saved"),
    # 5. mean teacher through AveragedModel
    _bug("swa_teacher.py", "lose-teacher", "teacher", "AveragedModel teacher not saved"),
    _bug(
        "swa_teacher.py", "lose-n-averaged", "teacher", "teacher.module saved without n_averaged: first update copies"
    ),
    _control("swa_teacher.py", "AveragedModel.state_dict() saved, n_averaged included"),
    # 6. GradScaler on CPU
    _bug("grad_scaler.py", "lose-scaler", "scaler", "GradScaler not saved: only the scale differs"),
    _control("grad_scaler.py", "GradScaler.state_dict() saved"),
    # 7. ReduceLROnPlateau: its state holds mode_worse = inf
    _bug("plateau.py", "lose-scheduler", "scheduler", "ReduceLROnPlateau not saved"),
    _control("plateau.py", "ReduceLROnPlateau saved; its state_dict reports inf in both runs"),
    # 8. warm-up schedule
    _bug("warmup.py", "recreate-scheduler", "scheduler", "SequentialLR warm-up re-created, not loaded"),
    _control("warmup.py", "SequentialLR warm-up loaded"),
    # 9. non-persistent buffers
    _bug("nonpersistent_buffer.py", "lose-buffers", "model", "running-mean buffers (persistent=False) not saved"),
    _control("nonpersistent_buffer.py", "non-persistent buffers saved beside the state_dict"),
    # 10. a dropout generator the trainer does not know about
    _bug(
        "dropout_generator.py",
        "unsaved-generator",
        "rng-dropout",
        "mask generator neither saved, reported nor declared",
        right=frozenset({UNKNOWN, "rng-dropout"}),
    ),
    _control("dropout_generator.py", "mask generator saved, reported and declared as rng-dropout"),
    # 11. non-determinism before the resume point
    _bug("early_nondeterminism.py", "hash-order", NOT_DETERMINISTIC, "input columns in the order of a set of strings"),
    _bug("early_nondeterminism.py", "unseeded", NOT_DETERMINISTIC, "shuffle generator created without a seed"),
    _control("early_nondeterminism.py", "columns sorted, generator seeded"),
    # 12. non-determinism only after the resume point
    _bug("late_nondeterminism.py", "hash-order", NOT_DETERMINISTIC, "after k, batches by class in set order"),
    _bug(
        "late_nondeterminism.py",
        "unseeded-noise",
        NOT_DETERMINISTIC,
        "after k, gradient noise from an unseeded generator",
    ),
    _control("late_nondeterminism.py", "classes sorted, noise generator seeded"),
    # 13. optimizer re-created on resume (short state keys: net, opt, sched)
    _bug("optimizer_recreated.py", "recreate-optimizer", "optimizer", "fresh AdamW after loading the weights"),
    _control("optimizer_recreated.py", "AdamW loaded"),
    # 14. next draws under next.draws
    _bug("next_draws_key.py", "lose-numpy", "rng-numpy", "augmentation generator left out of the restore"),
    _control("next_draws_key.py", "every generator restored; draws reported under next.draws"),
    # 15. a negative control without power
    Case(
        name="no_power/k5",
        script="no_power.py",
        exit=1,
        cause=NO_POWER,
        why="correct loop; its only generator is first drawn at update 6, so k = 5 cannot show a lost one",
    ),
    Case(
        name="no_power/never",
        script="no_power.py",
        args=("--dropout-from", "100"),
        exit=1,
        cause=NO_POWER,
        why="correct loop whose generator is never drawn in 10 updates",
    ),
    Case(
        name="no_power/k7",
        script="no_power.py",
        verify=("--interrupt-at", "7"),
        exit=0,
        cause=NONE,
        why="the same loop interrupted after its generator was drawn",
    ),
    # 16. the trainer's own part names, --faults all
    _bug("own_parts.py", "lose-aug", "rng-aug", "jitter generator left out of the restore"),
    _control(
        "own_parts.py",
        "every part restored; --faults all must ask for its own parts and name each",
        variant="faults-all",
        verify=("--faults", "all"),
        faults=OWN_PARTS,
    ),
    _control(
        "own_parts.py",
        "every part restored; its own parts named in --faults: each fault must be diagnosed by its own name",
        variant="faults-listed",
        verify=("--faults", ",".join(OWN_PARTS)),
        faults=OWN_PARTS,
    ),
    # more: sampler epoch, restore order, nanoGPT's re-seeding
    _bug("sampler_epoch.py", "skip-set-epoch", "data", "resumed epoch iterated without sampler.set_epoch()"),
    _control("sampler_epoch.py", "sampler.set_epoch(epoch) before the resumed epoch's iterator"),
    _bug(
        "scheduler_order.py",
        "build-after-load",
        "optimizer",
        "LambdaLR built after optimizer.load_state_dict(): the restored lr overwritten",
    ),
    _control("scheduler_order.py", "LambdaLR built before the optimizer's load"),
    _bug("reseed_on_resume.py", "reseed", "rng-torch", "nanoGPT: manual_seed at start-up, no RNG state saved"),
    _control("reseed_on_resume.py", "torch's generator state saved and restored last"),
)


# -- scoring ----------------------------------------------------------------------------------
# verification.json is read into the package's own typed result, and every check is found by its
# identity (kind, trajectory, part) and every diagnosis by its rule and parts, never by wording.

COMPARISONS = (CheckKind.RESUME, CheckKind.PREFIX, CheckKind.CADENCE)


def _said(check: Check) -> str:
    return (
        f"{check.id.kind} {check.id.part or check.id.trajectory}: {check.diagnosis.named if check.diagnosis else '-'}"
    )


def score(case: Case, v: Verification | None) -> tuple[str, list[Check]]:
    """right, vague or wrong for the case's diagnosis, and the checks whose diagnoses decided it."""
    if v is None:
        return VAGUE, []
    resumes = [c for c in v.checks if c.id.kind in COMPARISONS and not c.passed and c.diagnosis]
    negative = [c for c in v.of_kind(CheckKind.NEGATIVE_CONTROL) if not c.passed and c.diagnosis]
    blamed = [c for c in resumes + negative if c.diagnosis and c.diagnosis.lost]
    if case.cause == NONE:
        return (WRONG if blamed else RIGHT), blamed
    if case.cause == NOT_DETERMINISTIC:
        return (WRONG if blamed else RIGHT if not v.deterministic else VAGUE), resumes
    if case.cause == NO_POWER:
        powerless = any(c.diagnosis and c.diagnosis.rule == NO_POWER for c in negative)
        return (WRONG if blamed else RIGHT if powerless else VAGUE), negative
    if not v.deterministic:
        return WRONG, resumes  # lost state called non-determinism
    marks = [_mark(case, c.diagnosis.lost) for c in resumes if c.diagnosis]
    if not marks:
        return (RIGHT if UNKNOWN in case.right else VAGUE), []
    return (WRONG if WRONG in marks else RIGHT if all(m == RIGHT for m in marks) else VAGUE), resumes


def _mark(case: Case, parts: tuple[str, ...]) -> str:
    if parts:
        return RIGHT if set(parts) <= case.right_parts else WRONG
    return RIGHT if UNKNOWN in case.right else VAGUE


def score_faults(case: Case, v: Verification | None) -> dict[str, tuple[str, str]]:
    """Per expected fault: (right/vague/wrong, what its diagnosis named); vague when it did not run or names none."""
    scored = {}
    for part in case.faults:
        fault = v.faults.get(part) if v is not None else None
        found = fault.diagnosis if fault is not None else None
        if found is None:
            scored[part] = (VAGUE, "-")
        else:
            mark = VAGUE if not found.lost else RIGHT if found.lost == (part,) else WRONG
            scored[part] = (mark, found.named)
    return scored


# -- running -----------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Result:
    case: str
    expected_exit: int
    exit: int
    verdict: str  # RIGHT or WRONG
    diagnosis: str  # RIGHT, VAGUE or WRONG
    said: str  # the diagnoses that decided it, "where name: parts; ..."
    faults: dict[str, tuple[str, str]] = field(default_factory=dict)
    reason: str  # the verifier's last stderr line
    seconds: float


def verifier_env() -> dict[str, str]:
    """The environment trainers inherit: PYTHONHASHSEED unset, so that a hash-order bug shows."""
    return {key: value for key, value in os.environ.items() if key != "PYTHONHASHSEED"}


def run_case(case: Case, output: Path, jobs: int = 1, timeout: float = 600) -> Result:
    """One verification of `case` into `output` (which must not exist), scored."""
    argv = [sys.executable, "-B", "verify_resume.py", "--output", str(output), "--jobs", str(jobs)]
    argv += ["--train-cmd", case.train_cmd(sys.executable), *case.verify]
    start = time.perf_counter()
    proc = subprocess.run(argv, cwd=REPO, env=verifier_env(), capture_output=True, text=True, timeout=timeout)
    seconds = time.perf_counter() - start
    report = output / "verification.json"
    doc = json.loads(report.read_text()) if report.is_file() else {}
    v = Verification.from_json(doc) if doc else None
    diagnosis, relevant = score(case, v)
    faults = score_faults(case, v)
    if faults:  # a case that runs faults is only as right as its worst-diagnosed fault
        marks = [diagnosis, *(mark for mark, _ in faults.values())]
        diagnosis = WRONG if WRONG in marks else RIGHT if all(m == RIGHT for m in marks) else VAGUE
    lines = [line.strip() for line in proc.stderr.strip().splitlines() if line.strip()]
    if not doc and proc.returncode != 2:  # a traceback's exit 1 is not a comparison that failed
        raise RuntimeError(
            f"{case.name}: the verifier exited {proc.returncode} without verification.json: {lines[-1:]}"
        )
    return Result(
        case=case.name,
        expected_exit=case.exit,
        exit=proc.returncode,
        verdict=RIGHT if proc.returncode == case.exit else WRONG,
        diagnosis=diagnosis,
        said="; ".join(_said(c) for c in relevant) or "-",
        faults=faults,
        reason=lines[-1] if lines else "",
        seconds=round(seconds, 1),
    )


def select(only: str | None) -> list[Case]:
    if not only:
        return list(CASES)
    wanted = [name.strip() for name in only.split(",") if name.strip()]
    chosen = [c for c in CASES if c.name in wanted or c.family in wanted]
    unknown = [w for w in wanted if not any(c.name == w or c.family == w for c in CASES)]
    if unknown:
        raise SystemExit(f"--only: no case or family {', '.join(unknown)}; cases: {', '.join(c.name for c in CASES)}")
    return chosen


# -- reporting ---------------------------------------------------------------------------------


def case_table(cases: dict[str, Case], results: list[Result]) -> str:
    rows = [
        "| case | true cause | exit (expected) | verdict | diagnosis said | diagnosis |",
        "|---|---|---|---|---|---|",
    ]
    for r in results:
        said = r.said
        if r.faults:
            said = ", ".join(f"{part}: {named}" for part, (_, named) in r.faults.items())
            said = f"faults {said}"
        cause, exits = cases[r.case].cause, f"{r.exit} ({r.expected_exit})"
        rows.append(f"| {r.case} | {cause} | {exits} | {r.verdict} | {said} | {r.diagnosis} |")
    return "\n".join(rows)


def counts(cases: dict[str, Case], results: list[Result]) -> dict[str, Counter]:
    groups: dict[str, Counter] = {"bugs": Counter(), "controls": Counter(), "faults": Counter(), "all cases": Counter()}
    for r in results:
        group = groups["controls" if cases[r.case].is_control else "bugs"]
        for counter in (group, groups["all cases"]):
            counter["cases"] += 1
            counter[f"verdict {r.verdict}"] += 1
            counter[r.diagnosis] += 1
        for mark, _ in r.faults.values():
            groups["faults"]["cases"] += 1
            groups["faults"][mark] += 1
    return groups


def count_table(groups: dict[str, Counter]) -> str:
    rows = [
        "| | cases | verdict right | verdict wrong | diagnosis right | vague | wrong |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, c in groups.items():
        verdicts = ("-", "-") if name == "faults" else (c["verdict right"], c["verdict wrong"])
        rows.append(f"| {name} | {c['cases']} | {verdicts[0]} | {verdicts[1]} | {c[RIGHT]} | {c[VAGUE]} | {c[WRONG]} |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0], allow_abbrev=False)
    parser.add_argument("--jobs", type=int, default=2, help="Verifications at once (default 2).")
    parser.add_argument("--only", help="Comma-separated case names or families (e.g. ema, plateau/fixed).")
    parser.add_argument("--json", type=Path, help="Also write the results and counts as JSON here.")
    parser.add_argument("--keep", type=Path, help="Keep every verification under this directory (must not exist).")
    parser.add_argument("--list", action="store_true", help="Print the cases and exit.")
    options = parser.parse_args(argv)
    chosen = select(options.only)
    if options.list:
        for c in chosen:
            print(f"{c.name:40} exit {c.exit}  cause {c.cause:18} {c.train_cmd()} {shlex.join(c.verify)}")
        return 0
    jobs = max(1, options.jobs)
    per_verifier = max(1, (os.cpu_count() or 2) // jobs)  # trainer processes per verification
    root = options.keep or Path(tempfile.mkdtemp(prefix="diagnosis-corpus-"))
    if options.keep:
        root.mkdir(parents=True)
    cases = {c.name: c for c in CASES}
    start = time.perf_counter()

    def one(case: Case) -> Result:
        result = run_case(case, root / case.name.replace("/", "--"), per_verifier)
        print(
            f"{case.name:40} exit {result.exit} (expected {case.exit}) verdict {result.verdict:5} "
            f"diagnosis {result.diagnosis:5} [{result.said}] {result.seconds} s",
            file=sys.stderr,
            flush=True,
        )
        return result

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        results = list(pool.map(one, chosen))
    elapsed = time.perf_counter() - start
    groups = counts(cases, results)
    print(case_table(cases, results))
    print()
    print(count_table(groups))
    print(f"\n{len(results)} cases in {elapsed:.0f} s ({jobs} at once); verifications in {root}")
    if options.json:
        document = {
            "results": [asdict(r) for r in results],
            "counts": {name: dict(c) for name, c in groups.items()},
            "seconds": round(elapsed, 1),
        }
        options.json.write_text(json.dumps(document, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
