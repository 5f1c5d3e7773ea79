"""The measured spread of a trainer that is not deterministic, as verification.json holds it: per update and field
the envelope of the distances between runs of one command, per end-state key its spread (verify/judge/spread.py
measures it and holds runs to it; docs/checks.md says why FACTOR is 10)."""

from dataclasses import dataclass
from typing import Any

from resumeproof.common import codec

FACTOR = 10.0  # how many times its measured spread a field may move
VARIES = "varies"  # a field that varies among the reference runs in something other than floats: not held


@dataclass(frozen=True)
class Band:
    """The measured spread: per update and field the envelope (None: the field varies among the reference runs in
    something other than floats, and is not held), per end-state key its spread."""

    runs: tuple[str, ...]
    updates: dict[int, dict[str, float | None]]
    end: dict[str, float | None]

    def to_json(self) -> dict[str, Any]:
        fields = sorted({f for per in self.updates.values() for f in per})
        steps = tuple(sorted(self.updates))
        envelope = {f: tuple(self.updates[n].get(f) for n in steps) for f in fields}
        return codec.encode(Written(runs=self.runs, factor=FACTOR, updates=steps, envelope=envelope, end=self.end))

    @classmethod
    def from_json(cls, d: dict[str, Any] | None) -> "Band | None":
        if not d:
            return None
        w = codec.decode(Written, d, "spread")
        if any(len(values) != len(w.updates) for values in w.envelope.values()):
            raise codec.CodecError("spread.envelope: not one value per update of spread.updates")
        updates = {n: {f: values[i] for f, values in w.envelope.items()} for i, n in enumerate(w.updates)}
        return cls(runs=w.runs, updates=updates, end=w.end)

    def at(self, n: int, field: str) -> float | str:
        """The band of one field at update n: FACTOR x its envelope; VARIES where it is not held; 0 where no two
        reference runs hold update n (nothing measured there: it must be equal)."""
        per = self.updates.get(n)
        if per is None or field not in per:
            return 0.0
        return self.times(per[field])

    @staticmethod
    def times(spread: float | None) -> float | str:
        """A field's band from its measured spread: FACTOR x it, or VARIES where it is not held."""
        return VARIES if spread is None else FACTOR * spread


@dataclass(frozen=True, kw_only=True)
class Written:
    """A band as verification.json holds it: per field its envelope, one value per update of `updates`, in order."""

    runs: tuple[str, ...]
    factor: float
    updates: tuple[int, ...]
    envelope: dict[str, tuple[float | None, ...]]
    end: dict[str, float | None]
