"""Checkpoint files accepted although their kind is refused (`--allow-unsafe-pickle`, `--allow-opaque`), by name.

Apart from the checkers (common/checkpoint_files.py) so that reading the options loads none of them.
"""

import fnmatch
from dataclasses import dataclass


@dataclass(frozen=True)
class Allowances:
    """Files accepted although their kind is refused, by glob over their path inside the checkpoint."""

    unsafe_pickle: tuple[str, ...] = ()  # --allow-unsafe-pickle GLOB ...
    opaque: tuple[str, ...] = ()  # --allow-opaque GLOB ...

    def pattern_for(self, kind: str, name: str) -> str | None:
        patterns = self.unsafe_pickle if kind == "pickle" else self.opaque if kind == "opaque" else ()
        return next((p for p in patterns if fnmatch.fnmatchcase(name, p)), None)


NONE_ALLOWED = Allowances()
