"""Files whose pickle runs code when anything resolves what it names: here the code only creates a marker file."""

import collections
import random
from pathlib import Path

import torch

from . import zipwriter
from .arguments import Call, saved
from .pickles import marker_payload, runs_code

HOWS = ("os.system", "builtins.exec", "builtins.eval", "subprocess.getoutput")


class Builds:
    """Unpickled through NEWOBJ and BUILD: the state is set on an object of a class the file names."""

    def __init__(self, marker: str) -> None:
        self.hook = runs_code("os.system", marker)


def payload_file(rng: random.Random, marker: Path, base: bytes) -> bytes:
    """A torch archive (or a plain pickle) that would create `marker` if its code ran."""
    how, protocol = rng.choice(HOWS), rng.choice((0, 1, 2, 2, 2, 4, 5))
    stream = marker_payload(how, str(marker), protocol)
    prefix, records = zipwriter.read(base)
    choice = rng.randrange(8)
    if choice == 0:
        return stream  # a bare pickle, not a zip archive
    if choice == 1:  # hidden beside data.pkl, named as torch's case-insensitive lookup might find it
        records.insert(1, zipwriter.Record(rng.choice(("DATA.PKL", "Data.pkl", "data.PKL")), stream))
        return zipwriter.write(records, zipwriter.Layout(prefix=prefix))
    if choice == 2:  # listed by a decoy central directory before the real one
        layout = zipwriter.Layout(
            prefix=prefix, second_directory=True, decoy_records=[zipwriter.Record("data.pkl", stream)]
        )
        return zipwriter.write(records, layout)
    if choice == 3:  # the payload as an argument of an allowlisted rebuild function
        storage = torch.zeros(2).untyped_storage()
        obj = Call(
            torch._utils._rebuild_tensor_v2, (storage, 0, (2,), (1,), False, runs_code("os.system", str(marker)))
        )
        return saved({"w": obj}) or stream
    if choice == 4:  # inside an OrderedDict and a Counter, as values
        hook = runs_code("builtins.eval", str(marker))
        return saved(collections.OrderedDict(a=collections.Counter(b=hook))) or stream
    if choice == 5:
        return saved({"obj": Builds(str(marker))}) or stream
    records[0] = zipwriter.Record("data.pkl", stream)  # the stream itself as data.pkl, any protocol
    return zipwriter.write(records, zipwriter.Layout(prefix=prefix))
