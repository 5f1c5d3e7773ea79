"""The GPU matrix of docs/gpu.md, measured by one command on a machine with one CUDA GPU.

    python -B -m benchmarks.gpu                          # about 3 to 4 minutes on an H200: prints the tables and
                                                         # writes them into docs/gpu.md between its markers
    python -B -m benchmarks.gpu --no-write               # prints them only
    python -B -m benchmarks.gpu --doc /tmp/gpu.md        # writes them into that copy of docs/gpu.md instead
    python -B -m benchmarks.gpu --dry-run                # the verifications it would run, run nothing
    python -B -m benchmarks.gpu --device cpu --no-write  # the same matrix on the CPU: a check of this script

What it runs, every verification a fresh `verify_resume.py` (resumeproof verify) of the reference trainer:
- `--device cuda` at each precision (float64, float32, bf16 autocast, fp16 autocast with a GradScaler), at the
  default atol (1e-12) and at `--atol 0` (bit-identical): the verdict and the wall time;
- the fault matrix at fp16 (`--faults all`: every declared part, rng-cuda and scaler among them): caught, by
  what, diagnosed as what;
- a deliberately non-deterministic variant (this module's `nondeterministic-trainer`: the reference trainer with
  `torch.use_deterministic_algorithms(False)` and a float32 `index_add_`, whose CUDA atomics add in whatever
  order the threads arrive), which must read "not deterministic";
- the verify-to-train ratio, as benchmarks/verify_ratio.py measures it on the CPU (the same `timed`, from
  benchmarks/helpers.py), alone on the machine after the matrix.
The matrix runs `--parallel` verifications at once, each with `--jobs` trainer processes, all on the one GPU
(CUDA_VISIBLE_DEVICES=0 unless set). Without CUDA it refuses to run (exit 2). Every figure it writes comes from
the run that wrote it; docs/gpu.md says where none was measured.

Run from the repository's root. This module is the command; the matrix is benchmarks/gpu_matrix.py, running it
and reading each verification.json benchmarks/gpu_outcomes.py, the tables benchmarks/gpu_tables.py.
"""

import json
import os
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.gpu_matrix import RATIO_STEPS, VARIANT, matrix
from benchmarks.gpu_outcomes import measure_ratio, run_matrix
from benchmarks.gpu_tables import BLOCKS, DOC, blocks, write_blocks
from benchmarks.helpers import REPO


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


def _unwritable(doc: Path) -> str:
    """Why the tables could not be written into `doc` once measured (checked before minutes of runs); "" if they can."""
    try:
        write_blocks(doc.read_text(), {name: "" for name in BLOCKS})
    except OSError as error:
        return error.strerror or str(error)
    except ValueError as error:
        return str(error)
    return ""


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
    parser.add_argument("--doc", type=Path, default=DOC, help="The page to write into: a copy of docs/gpu.md.")
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
    if args.device == "cuda" and not args.no_write:
        unwritable = _unwritable(args.doc)
        if unwritable:
            refuse(f"--doc {args.doc}: {unwritable}")
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
        args.doc.write_text(write_blocks(args.doc.read_text(), found))
        print(f"written into {args.doc}")
    unexpected = [o.case.key for o in outcomes if o.verdict != o.case.expect]
    if unexpected:
        print(f"not as expected: {', '.join(unexpected)}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    if sys.argv[1:2] == [VARIANT]:
        nondeterministic_trainer(sys.argv[2:])
    else:
        main(sys.argv[1:])
