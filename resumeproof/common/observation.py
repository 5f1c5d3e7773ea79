"""What the observer records inside a trainer's process, as both sides name it: the environment that asks for it,
the record file, its keys, and its reading (protocol revision 1.3, docs/protocol.md, "The observer's records").

The verifier starts every trajectory with `OBSERVE_ENV` naming the record file (without suffix; each rank of a
torchrun group adds its own) and `UPDATES_ENV` the updates of the process to record, counted from 1 in that
process. The observer (resumeproof/observe/) writes one JSON document, atomically, after each recorded update:

    {"format": "resumeproof-observation/1", "rank": 0, "updates": {"6": UPDATE, ...}, "restores": [...],
     "failed": null}

An UPDATE holds, in the order the update consumes them, digests (sha256 of the exact bytes) and a few numbers:
`start` (the generators' states right after the previous update; the process's first update has none),
`forward` (at the first forward pass: the generators, the batch entering the root module, the model's parameters
and buffers), `loss` (the loss handed to backward, unscaled where a GradScaler scaled it), `step` (right before
the optimizer's step: its state and every param group's hyper-parameters, every LR scheduler and GradScaler),
`after` (right after the step: the generators, the gradients the step used, the parameters). `restores` lists
every generator restore (`torch.set_rng_state`, `numpy.random.set_state`, `random.setstate`, the kit's
`Generators.restore`, ...) with the state's digest and the update it came before.

This module is loaded by its path inside trainers that may not have this package installed (the observer's
`sitecustomize`): it imports the standard library only.
"""

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FORMAT = "resumeproof-observation/1"
OBSERVE_ENV = "RESUMEPROOF_OBSERVE"  # the record file, without its suffix
UPDATES_ENV = "RESUMEPROOF_OBSERVE_UPDATES"  # "1,6,10": the process's updates to record
SITE = Path(__file__).resolve().parents[1] / "observe" / "site"  # the directory whose sitecustomize injects it
SUFFIX = ".json"

# The moments of an update, in the order the update consumes what they record.
START, FORWARD, LOSS, STEP, AFTER = "start", "forward", "loss", "step", "after"
MOMENTS = (START, FORWARD, LOSS, STEP, AFTER)
# What a moment holds.
GENERATORS, BATCH, MODEL, GRADS = "generators", "batch", "model", "grads"
OPTIMIZER, GROUPS, SCHEDULERS, SCALERS, PARAMS = "optimizer", "groups", "schedulers", "scalers", "params"
VALUE, DIGEST, SCALE = "value", "digest", "scale"
GLOBAL, KIT = "global", "kit"  # generators: the process-wide ones by their own names, a trainer's own by its names


def record_file(base: str | Path, rank: int | None) -> Path:
    """The record file of one process: `BASE.json`, or `BASE.rank-R.json` under a launcher."""
    return Path(f"{base}{'' if rank is None else f'.rank-{rank}'}{SUFFIX}")


def updates_wanted(text: str | None) -> frozenset[int]:
    """The updates `UPDATES_ENV` names; none when it is absent or unreadable (the observer then records nothing)."""
    try:
        return frozenset(int(part) for part in (text or "").split(",") if part.strip())
    except ValueError:
        return frozenset()


def environment(base: dict[str, str], record: Path, updates: set[int] | frozenset[int]) -> dict[str, str]:
    """`base` with the observer injected: its sitecustomize first on PYTHONPATH, where to write, what to record."""
    path = [str(SITE), *([base["PYTHONPATH"]] if base.get("PYTHONPATH") else [])]
    wanted = ",".join(str(n) for n in sorted(updates))
    return {**base, "PYTHONPATH": os.pathsep.join(path), OBSERVE_ENV: str(record), UPDATES_ENV: wanted}


@dataclass(frozen=True)
class Observation:
    """One process's records, as read back by the verifier."""

    rank: int | None
    updates: dict[int, dict[str, Any]]  # update of the process -> moment -> what it holds
    restores: list[dict[str, Any]] = field(default_factory=list)
    failed: str | None = None  # why the observer stopped recording, if it did

    def at(self, update: int) -> dict[str, Any] | None:
        return self.updates.get(update)


def read_all(base: Path) -> dict[int | None, Observation]:
    """Every record one trajectory's processes wrote: one without a launcher, one per rank under torchrun."""
    found: dict[int | None, Observation | None] = {None: read(record_file(base, None))}
    for path in base.parent.glob(f"{base.name}.rank-*{SUFFIX}"):
        found[int(path.name.removesuffix(SUFFIX).rpartition("-")[2])] = read(path)
    return {rank: seen for rank, seen in found.items() if seen is not None}


def read(path: Path) -> Observation | None:
    """The records of `path`, or None where there are none or they are not the observer's (never an error: the
    records are evidence, and a trainer the observer could not watch is judged without them)."""
    try:
        document = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        return None
    updates = document.get("updates")
    if not isinstance(updates, dict):
        return None
    try:
        numbered = {int(n): moments for n, moments in updates.items() if isinstance(moments, dict)}
    except ValueError:
        return None
    restores = document.get("restores")
    rank = document.get("rank")
    return Observation(
        rank=rank if isinstance(rank, int) else None,
        updates=numbered,
        restores=restores if isinstance(restores, list) else [],
        failed=document.get("failed") if isinstance(document.get("failed"), str) else None,
    )
