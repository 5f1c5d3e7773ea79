"""The GPU benchmark's matrix (benchmarks/gpu.py): every verification it runs, and the verdict each must get."""

import shlex
import sys
from dataclasses import dataclass, replace
from pathlib import Path

VARIANT = "nondeterministic-trainer"  # `python -B -m benchmarks.gpu nondeterministic-trainer ...`: a trainer
PRECISIONS = {  # --precision: what it computes
    "float64": "float64",
    "float32": "float32, TF32 off",
    "bf16": "bf16 autocast, float32 weights",
    "fp16": "fp16 autocast, float32 weights, GradScaler",
}
ATOLS = (None, 0.0)  # the verifier's default (1e-12), and bit-identical
PASSED, FAILED, NOT_DETERMINISTIC, INCOMPLETE = "passed", "failed", "not deterministic", "could not complete"
TIMEOUT = 300  # seconds one trajectory may run (the verifier's --timeout)
RATIO_STEPS = 10


@dataclass(frozen=True, kw_only=True)
class Case:
    """One verification of the matrix."""

    key: str  # its folder under --output, unique
    table: str  # the block of docs/gpu.md it belongs to
    precision: str
    atol: float | None  # None: the verifier's default
    train_cmd: str
    extra: tuple[str, ...] = ()  # more verifier options (--faults all)
    expect: str = PASSED

    def argv(self, output: Path, jobs: int) -> list[str]:
        atol = ("--atol", f"{self.atol:g}") if self.atol is not None else ()
        verify = [sys.executable, "-B", "verify_resume.py", "--output", str(output / self.key)]
        verify += ["--train-cmd", self.train_cmd, "--jobs", str(jobs), "--timeout", str(TIMEOUT)]
        return [*verify, *atol, *self.extra]


def reference_cmd(device: str, precision: str, python: str = sys.executable) -> str:
    return f"{shlex.quote(python)} -B -m resumeproof.reference --device {device} --precision {precision}"


def matrix(device: str, python: str = sys.executable) -> list[Case]:
    """Every verification, the longest first (the fault matrix, then the non-deterministic variant, twice)."""
    # The verifier starts trainers in its own working directory, the repository's root (gpu_outcomes.run_case):
    # there `-m benchmarks.gpu` finds this package.
    variant = f"{shlex.quote(python)} -B -m benchmarks.gpu {VARIANT} --device {device} --precision float32"
    faults = Case(
        key="fp16-faults",
        table="faults",
        precision="fp16",
        atol=None,
        extra=("--faults", "all"),
        train_cmd=reference_cmd(device, "fp16", python),
    )
    # On the CPU one thread adds in a fixed order: there the variant is deterministic, and must pass. On the GPU it
    # differs from itself: with --require-deterministic that is the verdict; by default its exact restore and its
    # trajectory within its measured spread pass, and each part it loses is caught at its restore.
    strict = Case(
        key="nondeterministic",
        table="nondeterministic",
        precision="float32",
        atol=None,
        train_cmd=variant,
        extra=("--require-deterministic",),
        expect=NOT_DETERMINISTIC if device == "cuda" else PASSED,
    )
    tiers = replace(strict, key="nondeterministic-tiers", extra=("--faults", "all"), expect=PASSED)
    cases = [faults, strict, tiers]
    for precision in PRECISIONS:
        for atol in ATOLS:
            key = f"{precision}-atol-{'default' if atol is None else f'{atol:g}'}"
            train_cmd = reference_cmd(device, precision, python)
            cases.append(Case(key=key, table="precisions", precision=precision, atol=atol, train_cmd=train_cmd))
    return cases
