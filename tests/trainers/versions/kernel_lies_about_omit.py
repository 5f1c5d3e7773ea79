"""kernel.py's version whose `--omit=PART` is echoed in meta.omitted but not carried out: under other code every
resume's trajectory moves with the code, so a fault that omits nothing diverges all the same. It must not be counted
caught: its first update is fed what the continuous run's was.

    python -B tests/trainers/versions/kernel_lies_about_omit.py --steps 8 --output runs/b --resume ... --omit=optimizer
"""

import json
import sys
from pathlib import Path

import kernel  # noqa: F401  (the float32 linear layers: kernel.py's change, made on import)

from resumeproof.reference.train import main

claimed = [arg.removeprefix("--omit=") for arg in sys.argv[1:] if arg.startswith("--omit=")]
output = Path(sys.argv[sys.argv.index("--output") + 1])
sys.argv = [arg for arg in sys.argv if not arg.startswith("--omit=")]
try:
    main()
finally:
    if claimed:
        summary = json.loads((output / "summary.json").read_text())
        summary["meta"]["omitted"] = claimed  # the lie
        (output / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
