"""Case number i of seed s, the same bytes on every run: a generated checkpoint, or a mutation, or a payload.

Every draw comes from random.Random("s:i") and torch's generator seeded from the same pair (module
initialisations); sets hold only values whose hash is the same in every process once PYTHONHASHSEED
is fixed, which the workers do (run.py)."""

import random
import zlib
from dataclasses import dataclass
from pathlib import Path

import torch

from . import arguments, containers, content, payloads, pickles, zipwriter

# kind: weight. "valid" is torch.save of allowed content: the check must accept every one torch accepts.
KINDS = {"valid": 30, "pickle": 28, "call": 14, "container": 18, "payload": 10}


@dataclass(frozen=True)
class Case:
    index: int
    kind: str
    path: Path
    marker: Path  # created only if something ran the file's code


def make(seed: int, index: int, directory: Path) -> Case:
    rng = random.Random(f"{seed}:{index}")
    torch.manual_seed(zlib.crc32(f"{seed}:{index}".encode()))  # what nn.Linear draws, whatever came before
    kind = rng.choices(list(KINDS), weights=list(KINDS.values()))[0]
    path, marker = directory / f"case-{index}.pt", directory / f"MARKER-{index}"
    path.write_bytes(_bytes(kind, rng, marker))
    return Case(index, kind, path, marker)


def _valid(rng: random.Random) -> bytes:
    while True:
        data = arguments.saved(content.content(rng))
        if data is not None:
            return data


def _bytes(kind: str, rng: random.Random, marker: Path) -> bytes:
    base = _valid(rng)
    if kind == "valid":
        return base
    if kind == "pickle":
        prefix, records = zipwriter.read(base)
        records[0].data = pickles.mutate(records[0].data, rng)
        return zipwriter.write(records, zipwriter.Layout(prefix=prefix))
    if kind == "call":
        data = arguments.saved(arguments.call_pickle(rng))
        return data if data is not None else base
    if kind == "container":
        prefix, records = zipwriter.read(base)
        return containers.mutate(prefix, records, rng, pickles.marker_payload("os.system", str(marker)))
    return payloads.payload_file(rng, marker, base)
