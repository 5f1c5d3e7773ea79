"""Regenerate the reference experiment's data, resumeproof/reference/synthetic.csv, byte for byte:

    python -B data/make_data.py [OUT]

24 rows of (x1, x2) drawn uniformly from [-1, 1] and a target from a fixed relation plus noise.
Floats are written with repr(), the shortest text that reads back to the identical float64,
so the file (and therefore its sha256, the data identity) depends only on this script.
"""

import sys
from pathlib import Path

import numpy as np

ROWS, SEED, NOISE = 24, 20240501, 0.05
OUT = Path(__file__).resolve().parent.parent / "resumeproof" / "reference" / "synthetic.csv"  # package data


def target(x1: float, x2: float) -> float:
    return 1.5 * x1 - 2.0 * x2 + 0.5 * x1 * x2


def main(out: Path) -> None:
    gen = np.random.Generator(np.random.PCG64(SEED))
    xs = gen.uniform(-1.0, 1.0, size=(ROWS, 2))
    noise = gen.normal(0.0, NOISE, size=ROWS)
    lines = ["x1,x2,y"]
    for (x1, x2), eps in zip(xs.tolist(), noise.tolist(), strict=True):
        lines.append(f"{x1!r},{x2!r},{target(x1, x2) + eps!r}")
    out.write_bytes(("\n".join(lines) + "\n").encode("ascii"))


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT)
