"""Fault in the fault matrix itself: `--omit=PART` is echoed in meta.omitted but not carried out.

The bundled train.py runs a full resume, then its summary claims the part was omitted. The
verifier cannot see a lie in a label; it sees a "resume without PART" that does not diverge, and
must say the protocol is blind to that part (exit 1), never that the part was caught.
"""

import json
import sys
from pathlib import Path

from _protocol_files import run_train_py

claimed = [arg.removeprefix("--omit=") for arg in sys.argv[1:] if arg.startswith("--omit=")]
output = Path(sys.argv[sys.argv.index("--output") + 1])
try:
    run_train_py([arg for arg in sys.argv[1:] if not arg.startswith("--omit=")])
finally:
    if claimed:
        summary = json.loads((output / "summary.json").read_text())
        summary["meta"]["omitted"] = claimed  # the lie
        (output / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
