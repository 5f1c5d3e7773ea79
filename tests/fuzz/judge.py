"""A worker: reads case numbers on stdin, judges each with the check and with torch, prints JSON lines.

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

from resumeproof.common import weights_only

from . import cases


def _emit(**fields: object) -> None:
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def ours(path: Path) -> str:
    try:
        weights_only.check(path)
        return "accept"
    except weights_only.WeightsOnlyError as err:
        return "refuse" if str(err).startswith(f"{path}: ") and "\n" not in str(err) else "foreign:message"
    except BaseException as err:  # anything else is a failure of the check: counted, never hidden
        return f"foreign:{type(err).__name__}"


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
