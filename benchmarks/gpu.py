"""The GPU matrix of docs/gpu.md, measured by one command on a machine with one CUDA GPU.

    python -B benchmarks/gpu.py                          # about 3 to 4 minutes on an H200: prints the tables and
                                                         # writes them into docs/gpu.md between its markers
    python -B benchmarks/gpu.py --no-write               # prints them only
    python -B benchmarks/gpu.py --dry-run                # the verifications it would run, run nothing
    python -B benchmarks/gpu.py --device cpu --no-write  # the same matrix on the CPU: a check of this script

What it runs, every verification a fresh `verify_resume.py` (resumeproof verify) of the reference trainer:
- `--device cuda` at each precision (float64, float32, bf16 autocast, fp16 autocast with a GradScaler), at the
  default atol (1e-12) and at `--atol 0` (bit-identical): the verdict and the wall time;
- the fault matrix at fp16 (`--faults all`: every declared part, rng-cuda and scaler among them): caught, by
  what, diagnosed as what;
- a deliberately non-deterministic variant (this file's `nondeterministic-trainer`: the reference trainer with
  `torch.use_deterministic_algorithms(False)` and a float32 `index_add_`, whose CUDA atomics add in whatever
  order the threads arrive), which must read "not deterministic";
- the verify-to-train ratio, as benchmarks/verify_ratio.py measures it on the CPU (its `timed`), alone on the
  machine after the matrix.
The matrix runs `--parallel` verifications at once, each with `--jobs` trainer processes, all on the one GPU
(CUDA_VISIBLE_DEVICES=0 unless set). Without CUDA it refuses to run (exit 2). Every figure it writes comes from
the run that wrote it; docs/gpu.md says where none was measured.
"""

import json
import os
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "gpu.md"
VARIANT = "nondeterministic-trainer"  # `python -B benchmarks/gpu.py nondeterministic-trainer ...`: a trainer
PRECISIONS = {  # --precision: what it computes
    "float64": "float64",
    "float32": "float32, TF32 off",
    "bf16": "bf16 autocast, float32 weights",
    "fp16": "fp16 autocast, float32 weights, GradScaler",
}
ATOLS = (None, 0.0)  # the verifier's default (1e-12), and bit-identical
PASSED, FAILED, NOT_DETERMINISTIC, INCOMPLETE = "passed", "failed", "not deterministic", "could not complete"
BLOCKS = ("environment", "precisions", "faults", "nondeterministic", "ratio")  # the markers in docs/gpu.md
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
        return [
            sys.executable, "-B", "verify_resume.py", "--output", str(output / self.key), "--train-cmd",
            self.train_cmd, "--jobs", str(jobs), "--timeout", str(TIMEOUT), *atol, *self.extra,
        ]  # fmt: skip


def reference_cmd(device: str, precision: str, python: str = sys.executable) -> str:
    return f"{shlex.quote(python)} -B -m resumeproof.reference --device {device} --precision {precision}"


def matrix(device: str, python: str = sys.executable) -> list[Case]:
    """Every verification, the longest first (the fault matrix, then the non-deterministic variant)."""
    variant = f"{shlex.quote(python)} -B benchmarks/gpu.py {VARIANT} --device {device} --precision float32"
    cases = [
        Case(key="fp16-faults", table="faults", precision="fp16", atol=None, extra=("--faults", "all"),
             train_cmd=reference_cmd(device, "fp16", python)),
        # On the CPU one thread adds in a fixed order: there the variant is deterministic, and must pass.
        Case(key="nondeterministic", table="nondeterministic", precision="float32", atol=None, train_cmd=variant,
             expect=NOT_DETERMINISTIC if device == "cuda" else PASSED),
    ]  # fmt: skip
    for precision in PRECISIONS:
        for atol in ATOLS:
            key = f"{precision}-atol-{'default' if atol is None else f'{atol:g}'}"
            cases.append(Case(key=key, table="precisions", precision=precision, atol=atol,
                              train_cmd=reference_cmd(device, precision, python)))  # fmt: skip
    return cases


# -- what a verification showed, read off its verification.json ------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Fault:
    detected: bool
    caught_by: tuple[str, ...]
    diagnosis: str


@dataclass(frozen=True, kw_only=True)
class Outcome:
    case: Case
    exit_code: int
    seconds: float
    verdict: str  # PASSED, FAILED, NOT_DETERMINISTIC or INCOMPLETE
    detail: str  # why, where it is not a pass: the error, or where the runs first differ
    max_deviation: float | None  # the full resume's, against the continuous run
    faults: dict[str, Fault] = field(default_factory=dict)
    environment: dict[str, Any] = field(default_factory=dict)


def verdict(document: dict[str, Any]) -> str:
    """The verifier's verdict, as its last line says it: an error first, then determinism, then the checks."""
    if document.get("error"):
        return INCOMPLETE
    if document.get("deterministic") is False:
        return NOT_DETERMINISTIC
    return PASSED if document.get("all_checks_passed") else FAILED


def outcome(case: Case, document: dict[str, Any] | None, exit_code: int, seconds: float) -> Outcome:
    """What one verification showed; a missing verification.json is a verification that could not complete."""
    if document is None:
        return Outcome(case=case, exit_code=exit_code, seconds=seconds, verdict=INCOMPLETE,
                       detail="no verification.json (see its log)", max_deviation=None)  # fmt: skip
    found = verdict(document)
    full = (document.get("comparison") or {}).get("full_resume") or {}
    if found == INCOMPLETE:
        detail = str(document["error"])
    elif found == NOT_DETERMINISTIC:
        d = document.get("determinism") or {}
        detail = f"differs from itself from update {d.get('first_step')} ({d.get('first_mismatch')})"
    elif found == FAILED:
        detail = f"first mismatch {full.get('first_mismatch')}; blind to {document.get('blind_to') or 'nothing'}"
    else:
        detail = ""
    faults = {
        part: Fault(detected=bool(f.get("detected")), caught_by=tuple(f.get("caught_by") or ()),
                    diagnosis=((f.get("diagnosis") or {}).get("lost")) or "unknown")
        for part, f in (document.get("faults") or {}).items()
    }  # fmt: skip
    return Outcome(case=case, exit_code=exit_code, seconds=seconds, verdict=found, detail=detail,
                   max_deviation=full.get("max_deviation"), faults=faults,
                   environment=document.get("environment") or {})  # fmt: skip


def run_case(case: Case, output: Path, jobs: int, env: dict[str, str] | None) -> Outcome:
    """One verification, its output in output/KEY.log."""
    started = time.perf_counter()
    with open(output / f"{case.key}.log", "w") as log:
        proc = subprocess.run(case.argv(output, jobs), cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    seconds = time.perf_counter() - started
    report = output / case.key / "verification.json"
    return outcome(case, json.loads(report.read_text()) if report.is_file() else None, proc.returncode, seconds)


# -- the tables --------------------------------------------------------------------------------------------------


def markdown(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _deviation(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"


def precisions_table(outcomes: Sequence[Outcome]) -> str:
    rows = [
        [o.case.precision, PRECISIONS[o.case.precision], "1e-12 (default)" if o.case.atol is None else "0",
         f"**{o.verdict}**" + (f": {o.detail}" if o.detail else ""), o.exit_code, _deviation(o.max_deviation),
         f"{o.seconds:.1f}"]
        for o in outcomes if o.case.table == "precisions"
    ]  # fmt: skip
    header = ("--precision", "computes", "atol", "verdict", "exit", "full resume: max deviation", "wall s")
    return markdown(header, rows)


def faults_table(outcomes: Sequence[Outcome]) -> str:
    found = next((o for o in outcomes if o.case.table == "faults"), None)
    if found is None:
        return markdown(("omitted part", "caught", "caught by", "diagnosis"), [])
    rows = [[part, "yes" if f.detected else "**no**", ", ".join(f.caught_by) or "-", f.diagnosis]
            for part, f in found.faults.items()]  # fmt: skip
    head = f"`--precision {found.case.precision} --faults all`: **{found.verdict}** (exit {found.exit_code}, "
    head += f"{found.seconds:.1f} s){': ' + found.detail if found.detail else ''}\n\n"
    return head + markdown(("omitted part", "caught", "caught by", "diagnosis"), rows)


def nondeterministic_table(outcomes: Sequence[Outcome]) -> str:
    rows = [[f"`{VARIANT}` ({o.case.precision}, deterministic algorithms off, `index_add_`)", o.case.expect,
             f"**{o.verdict}**", o.detail or "-", o.exit_code, f"{o.seconds:.1f}"]
            for o in outcomes if o.case.table == "nondeterministic"]  # fmt: skip
    return markdown(("trainer", "expected", "verdict", "detail", "exit", "wall s"), rows)


@dataclass(frozen=True, kw_only=True)
class Ratio:
    train: list[float]  # seconds of one `--steps 10` trainer process, per repeat
    verify: list[float]  # seconds of one default verification, per repeat

    @property
    def value(self) -> float:
        return statistics.median(self.verify) / statistics.median(self.train)


def ratio_table(ratio: Ratio | None, device: str) -> str:
    header = ("what", "median s", "runs")
    if ratio is None:
        return markdown(header, [])
    rows = [
        [f"`python -B -m resumeproof.reference --device {device} --steps {RATIO_STEPS}` (one process)",
         f"{statistics.median(ratio.train):.2f}", ", ".join(f"{t:.2f}" for t in ratio.train)],
        [f"`verify_resume.py --train-cmd \"... --device {device}\"` (four trajectories)",
         f"{statistics.median(ratio.verify):.2f}", ", ".join(f"{t:.2f}" for t in ratio.verify)],
        ["ratio", f"**{ratio.value:.2f}**", ""],
    ]  # fmt: skip
    return markdown(header, rows)


def environment_text(outcomes: Sequence[Outcome], seconds: float, device: str) -> str:
    """Where and when the figures were measured, from what the trainer reported (meta.gpu) and the verifier."""
    env = next((o.environment for o in outcomes if o.environment), {})
    gpu = env.get("gpu") or {}
    where = (
        f"{gpu.get('name')} (compute capability {gpu.get('capability')}), driver {gpu.get('driver')} "
        f"(supports CUDA {gpu.get('driver_cuda')}), CUDA {gpu.get('cuda')}, cuDNN {gpu.get('cudnn')}"
        if gpu else f"device {device}, no GPU reported"
    )  # fmt: skip
    return (
        f"Measured on {date.today().isoformat()} with `python -B benchmarks/gpu.py` ({seconds:.0f} s in all): "
        f"{where}; torch {env.get('torch')}, Python {env.get('python')}, {env.get('platform')}.\n"
    )


def blocks(outcomes: Sequence[Outcome], ratio: Ratio | None, seconds: float, device: str) -> dict[str, str]:
    return {
        "environment": environment_text(outcomes, seconds, device),
        "precisions": precisions_table(outcomes),
        "faults": faults_table(outcomes),
        "nondeterministic": nondeterministic_table(outcomes),
        "ratio": ratio_table(ratio, device),
    }


def write_between(text: str, replacements: dict[str, str]) -> str:
    """`text` with what lies between each `<!-- gpu:NAME -->` line and its `<!-- /gpu:NAME -->` replaced."""
    for name, body in replacements.items():
        start, end = f"<!-- gpu:{name} -->\n", f"<!-- /gpu:{name} -->"
        if text.count(start) != 1 or text.count(end) != 1 or text.index(start) > text.index(end):
            raise ValueError(f"the markers {start.strip()} ... {end} must appear once each, in that order")
        head, rest = text.split(start)
        tail = rest.split(end)[1]
        text = head + start + (body if body.endswith("\n") else body + "\n") + end + tail
    return text


# -- running it --------------------------------------------------------------------------------------------------


def measure_ratio(device: str, output: Path, repeats: int, env: dict[str, str]) -> Ratio:
    """verify_ratio.py's measurement on this device: train and verify alternately, medians."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    from benchmarks.verify_ratio import timed

    train_cmd = reference_cmd(device, "float64")
    train, verify = [], []
    for i in range(repeats):
        run = [*shlex.split(train_cmd), "--steps", str(RATIO_STEPS), "--output", str(output / f"ratio-train-{i}")]
        train.append(timed(run, env))
        check = [sys.executable, "-B", "verify_resume.py", "--output", str(output / f"ratio-verify-{i}")]
        verify.append(timed([*check, "--train-cmd", train_cmd], env))
    return Ratio(train=train, verify=verify)


def run_matrix(
    cases: Sequence[Case], output: Path, jobs: int, parallel: int, env: dict[str, str],
    say: Callable[[str], None] = print,
) -> list[Outcome]:  # fmt: skip
    def one(case: Case) -> Outcome:
        found = run_case(case, output, jobs, env)
        say(f"  {case.key}: {found.verdict} (exit {found.exit_code}) in {found.seconds:.1f} s")
        return found

    with ThreadPoolExecutor(max_workers=parallel) as pool:
        return list(pool.map(one, cases))


def cuda_available() -> bool:
    import torch  # only to ask; the verifications run in fresh processes

    return torch.cuda.is_available()


def refuse(message: str) -> None:
    print(f"gpu.py: error: {message}", file=sys.stderr)
    sys.exit(2)


def nondeterministic_trainer(argv: list[str]) -> None:
    """The reference trainer with deterministic algorithms turned off after its set-up and a float32 `index_add_`
    in every forward pass: 2**20 values summed into one bin per row, in the order the GPU's atomics arrive."""
    from resumeproof.reference import train  # first: it settles the thread pools before torch loads

    torch = train.torch
    os.environ[train.torch_setup.STOCK_ENV] = "1"  # the public calls: the one below needs the real TorchDynamo
    configure, forward = train.kit.configure_torch, train.Net.forward
    added: dict[str, Any] = {}

    def configure_then_allow(*args: Any, **kwargs: Any) -> Any:
        setup = configure(*args, **kwargs)
        torch.use_deterministic_algorithms(False)  # the deliberate fault
        return setup

    def forward_with_atomics(self: Any, x: Any, keep: Any = None) -> Any:
        out = forward(self, x, keep)
        if "values" not in added:  # fixed numbers from a generator of their own: the run's draws stay the same
            values = torch.randn(2**20, generator=torch.Generator().manual_seed(0), dtype=torch.float32)
            added["values"], added["index"] = values.to(x.device), torch.arange(2**20, device=x.device)
        bins = torch.zeros(out.shape[0], device=out.device, dtype=torch.float32)
        bins.index_add_(0, added["index"] % out.shape[0], added["values"])
        return out + 1e-3 * bins[:, None].to(out.dtype)

    train.kit.configure_torch = configure_then_allow
    train.Net.forward = forward_with_atomics  # type: ignore[method-assign]
    train.main(args=argv, prog_name=f"gpu.py {VARIANT}")


def main(argv: list[str]) -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda", help="cpu: a check of this script.")
    parser.add_argument("--output", type=Path, help="Where the runs go; must not exist (default runs/gpu-TIME).")
    parser.add_argument("--jobs", type=int, default=4, help="Trainer processes per verification (default 4).")
    cores = os.cpu_count() or 1
    parser.add_argument("--parallel", type=int, default=max(1, cores // 4), help="Verifications at once.")
    parser.add_argument("--ratio-repeats", type=int, default=2, help="Runs of each side of the ratio (default 2).")
    parser.add_argument("--no-write", action="store_true", help="Print the tables; leave docs/gpu.md alone.")
    parser.add_argument("--dry-run", action="store_true", help="Print the verifications; run nothing.")
    args = parser.parse_args(argv)
    if min(args.jobs, args.parallel, args.ratio_repeats) < 1:
        refuse("--jobs, --parallel and --ratio-repeats must be at least 1")
    output = args.output or REPO / "runs" / time.strftime("gpu-%Y%m%d-%H%M%S")
    cases = matrix(args.device)
    if args.dry_run:
        for case in cases:
            print(shlex.join(case.argv(output, args.jobs)))
        print(f"then the ratio: {args.ratio_repeats} x (one --steps {RATIO_STEPS} run, one default verification)")
        return
    if args.device == "cuda" and not cuda_available():
        refuse("CUDA is not available here: run it on a machine with a CUDA GPU (or --device cpu, to check it)")
    if output.exists():
        refuse(f"--output {output}: already exists")
    output.mkdir(parents=True)
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES", "0")}
    started = time.perf_counter()
    print(f"{len(cases)} verifications, {args.parallel} at once, --jobs {args.jobs}; output in {output}")
    outcomes = run_matrix(cases, output, args.jobs, args.parallel, env)
    print(f"the ratio, alone on the machine ({args.ratio_repeats} repeats)")
    ratio = measure_ratio(args.device, output, args.ratio_repeats, env)
    found = blocks(outcomes, ratio, time.perf_counter() - started, args.device)
    for name in BLOCKS:
        print(f"\n{name}:\n{found[name]}")
    (output / "gpu.json").write_text(json.dumps({name: found[name] for name in BLOCKS}, indent=1) + "\n")
    if args.device == "cuda" and not args.no_write:
        DOC.write_text(write_between(DOC.read_text(), found))
        print(f"written into {DOC.relative_to(REPO)}")
    unexpected = [o.case.key for o in outcomes if o.verdict != o.case.expect]
    if unexpected:
        print(f"not as expected: {', '.join(unexpected)}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    if sys.argv[1:2] == [VARIANT]:
        nondeterministic_trainer(sys.argv[2:])
    else:
        main(sys.argv[1:])
