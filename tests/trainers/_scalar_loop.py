"""A torch-free protocol trainer of revision 1.2 that the faulty trainers beside it bend one way each.

One weight pulled towards a target with noise from Python's `random`, its lr warmed up over the first
WARMUP updates by a counter that then stays at WARMUP; a second weight the loss never reads (masked).
It declares its parts (meta.parts: model, warmup, rng-python), honours `--omit=PART[,PART...]` and
echoes it (meta.omitted), and starts in milliseconds. `Bend` says what a faulty trainer changes.
"""

import argparse
import pickle
import random
import zipfile
from dataclasses import dataclass

from _protocol_files import PROTOCOL, checkpoint_bytes, make_output, parser, write_checkpoint, write_summary

PARTS = ("model", "warmup", "rng-python")
WARMUP = 3  # updates of lr warm-up; the counter stays there after it


@dataclass(frozen=True, kw_only=True)
class Bend:
    restores_warmup: bool = True  # False: the counter is saved but never restored
    unseeded_from: int | None = None  # from this update on, noise from a generator seeded per run as well
    masked: float = 0.0  # the weight the loss never reads


def parse() -> argparse.Namespace:
    p = parser()
    p.add_argument("--omit", default="", help="Parts not to restore, comma-separated.")
    args = p.parse_args()
    args.omit = sorted(part for part in args.omit.split(",") if part)
    unknown = set(args.omit) - set(PARTS)
    if unknown:
        p.error(f"--omit: unknown part {sorted(unknown)[0]!r}; parts are {', '.join(PARTS)}")
    return args


def run(bend: Bend) -> None:
    args = parse()
    if args.output.exists():
        raise SystemExit(f"--output {args.output}: already exists")
    rng, w, warm, step, history = random.Random(0), 0.0, 0, 0, []
    if args.resume:
        with zipfile.ZipFile(args.resume) as archive:
            state = pickle.loads(archive.read("archive/data.pkl"))  # this trainer's own file: plain data
        step, history = state["step"], state["history"]
        w = state["w"] if "model" not in args.omit else w
        warm = state["warm"] if bend.restores_warmup and "warmup" not in args.omit else warm
        if not args.omit_rng_restore and "rng-python" not in args.omit:
            rng.setstate(state["rng"])
    # Another stream in every run of the command (its output folder's name: continuous, continuous-repeat, resumed),
    # the same in every run of the suite: seeded by the OS, three repeats that happened to agree closely measured a
    # band a fourth run then left by chance (it failed a full run once)
    late = random.Random(args.output.name)
    for _ in range(args.steps):
        lr = 0.1 * (warm + 1) / (WARMUP + 1)
        step += 1
        history.append({"step": step, "rows": [step % 3], "lr": lr, "loss": (w - 1.0) ** 2})
        noise = rng.gauss(0.0, 0.1)
        if bend.unseeded_from is not None and step >= bend.unseeded_from:
            noise += late.gauss(0.0, 0.1)
        w -= lr * (2 * (w - 1.0) + noise)
        warm = min(warm + 1, WARMUP)
    make_output(args.output)
    saved = {"w": w, "warm": warm, "step": step, "history": history, "rng": rng.getstate()}
    write_checkpoint(args.output, checkpoint_bytes(saved))
    peek = random.Random()
    peek.setstate(rng.getstate())
    summary = {
        "protocol": PROTOCOL,
        "step": step,
        "history": history,
        "state": {"model": {"w": [w, bend.masked]}, "warmup": {"count": warm}},
        "next": {"lr": 0.1 * (warm + 1) / (WARMUP + 1), "rng": {"python": peek.random()}},
        "eval": {"distance": abs(w - 1.0)},
        "meta": {"parts": list(PARTS), "omitted": args.omit},
    }
    write_summary(args.output, summary)
