"""The cross-rank check that global state agrees: one sha256 per section, all-gathered before a save.

Every rank draws from the same global streams and keeps the same data position, so every rank must
hold the same global state. A rank that drifted (a resume that restored the data position or the
generators on rank 0 only) trains on other rows or other masks without any error: DDP keeps the
parameters in sync whatever the rows were. Rank 0 alone saves the global state, so the drift would
also vanish from the checkpoint. Comparing digests before each save turns it into a refusal naming
the ranks and the section.
"""

import hashlib
import json
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from resumeproof.common.errors import ResumeproofError
from resumeproof.common.protocol import rng_part
from resumeproof.kit.distributed.world import World
from resumeproof.kit.layout import RNG


class ReplicaError(ResumeproofError):
    """Ranks hold different global state."""


def sections(extra: dict[str, Any], tensors: dict[str, torch.Tensor]) -> dict[str, bytes]:
    """The global state as bytes, by the names --omit gives its parts (`data`, `rng-numpy`, ...)."""
    generators = {rng_part(name): json.dumps(state).encode() for name, state in extra.get(RNG, {}).items()}
    found = {key: json.dumps(value, sort_keys=True).encode() for key, value in extra.items() if key != RNG}
    return found | generators | {rng_part(name): tensor.numpy().tobytes() for name, tensor in tensors.items()}


def disagreements(world: World, named: dict[str, bytes]) -> dict[str, list[int]]:
    """For each section some rank holds differently from rank 0, the ranks that do."""
    names = sorted(named)
    digests = torch.stack([_digest(named[name]) for name in names])
    everyone = [torch.empty_like(digests) for _ in range(world.size)]
    dist.all_gather(everyone, digests)
    found = {}
    for i, name in enumerate(names):
        ranks = [r for r in range(1, world.size) if not torch.equal(everyone[r][i], everyone[0][i])]
        if ranks:
            found[name] = ranks
    return found


def check(world: World, named: dict[str, bytes], path: Path) -> None:
    """Refuse (on every rank alike) to save a checkpoint of ranks that disagree."""
    found = disagreements(world, named)
    if found:
        ranks = sorted({r for rs in found.values() for r in rs})
        what = ", ".join(found)
        shown = ", ".join(map(str, ranks))
        raise ReplicaError(f"{path}: rank {shown} holds another {what} than rank 0; refusing to save")


def _digest(data: bytes) -> torch.Tensor:
    return torch.frombuffer(bytearray(hashlib.sha256(data).digest()), dtype=torch.uint8)
