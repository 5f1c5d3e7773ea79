"""torch.load(weights_only=True) itself, for `--torch-load`: the verifier's one opt-in path that imports torch.

The default verification never loads this module's torch; an audit that wants the real loader as
a second authority asks for it, and pays about 1.3 s of imports.
"""

import io
from pathlib import Path

from resumeproof.common import dcp_check
from resumeproof.common.weights_only.errors import WeightsOnlyError, one_line, quote

REASON_CHARS = 200


def check_with_torch(path: Path, data: bytes | None = None) -> None:
    """Load `path` (or bytes read from it) with torch; any exception torch.load raises is a refusal."""
    import torch  # deliberately late: the default check keeps the verifier torch-free

    try:
        torch.load(path if data is None else io.BytesIO(data), map_location="cpu", weights_only=True)
    except Exception as err:  # torch raises UnpicklingError, RuntimeError, TypeError, KeyError, ... all refusals
        raise WeightsOnlyError(f"{path}: torch.load(weights_only=True) refused it ({_reason(err)})") from None


def check_dcp_data_file(path: Path) -> None:
    """Every item of a DCP data file loaded by torch, as FileSystemReader loads it."""
    for item, data in dcp_check.data_items(path):
        try:
            check_with_torch(path, data)
        except WeightsOnlyError as err:
            raise dcp_check.item_refused(path, item, err) from None


def _reason(err: Exception) -> str:
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    chosen = next((line for line in lines if "Unpickler error:" in line), lines[0] if lines else "")
    text = chosen.split("error:", 1)[1].strip() if "Unpickler error:" in chosen else chosen
    detail = quote(text, REASON_CHARS)[1:-1] if text else ""
    return one_line(f"{type(err).__name__}: {detail}" if detail else type(err).__name__)
