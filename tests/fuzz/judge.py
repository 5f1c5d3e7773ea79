"""A worker: reads case numbers on stdin, judges each with `resumeproof check` and with torch, prints JSON lines.

Our side is the function behind the `resumeproof check` command (resumeproof/verify/run/vet.py), the
same code a user runs on a file someone sent; a case has no sidecar, as such a file usually has none.

    python -B -m tests.fuzz.judge SEED DIRECTORY MEMORY_BYTES     (with the repository on PYTHONPATH)

Before each side runs it prints the phase, so that the parent knows which side hung or crashed.
"""

import json
import resource
import sys
import time
import warnings
from pathlib import Path

import torch

from resumeproof.common.weights_only import INTERNAL
from resumeproof.verify.run.vet import Verdict, vet

from . import cases


def _emit(**fields: object) -> None:
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def ours(path: Path) -> str:
    try:
        found = vet(path)
    except BaseException as err:  # vet never raises for what it finds: anything else is a failure, counted
        return f"foreign:{type(err).__name__}"
    if found.verdict is Verdict.ACCEPTED:
        return "accept"
    said = found.line()
    if INTERNAL in said:  # refused all the same, but a bug of the check: fuzzed bytes must never reach one
        return "foreign:internal"
    return (
        "refuse"
        if found.verdict is Verdict.REFUSED and said.startswith(f"{path}: ") and "\n" not in said
        else ("foreign:message")
    )


def theirs(path: Path) -> str:
    try:
        torch.load(path, map_location="cpu", weights_only=True)
        return "accept"
    except Exception:  # every exception is a refusal: torch raises many types on malformed files
        return "refuse"


def main() -> None:
    seed, directory, memory = int(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
    warnings.simplefilter("ignore")
    torch.set_num_threads(1)
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    for line in sys.stdin:
        index = int(line)
        case = cases.make(seed, index, directory)
        _emit(i=index, phase="ours")
        start = time.perf_counter()
        verdict = ours(case.path)
        ours_s = time.perf_counter() - start
        _emit(i=index, phase="torch")
        start = time.perf_counter()
        reference = theirs(case.path)
        torch_s = time.perf_counter() - start
        marker = case.marker.exists()
        case.path.unlink()
        case.marker.unlink(missing_ok=True)
        _emit(i=index, kind=case.kind, ours=verdict, torch=reference, ours_s=ours_s, torch_s=torch_s, marker=marker)


if __name__ == "__main__":
    main()
