"""A trainer written to the founding contract (resume-protocol/1, revision 1.0) and nothing more.

Its flags are exactly section 1's, its checkpoint is one file, its summary has no `meta.omitted`,
and it knows none of the extensions. It must stay verifiable (tests/e2e/test_protocol_compat.py): a
correct trainer, one weight pulled towards a target with noise from Python's random.
"""

import argparse
import hashlib
import pickle
import random
import zipfile

from _protocol_files import PROTOCOL, checkpoint_bytes, make_output, parser, write_checkpoint, write_summary


def run(args: argparse.Namespace) -> None:
    if args.output.exists():
        raise SystemExit(f"--output {args.output}: already exists")
    rng, w, step, history = random.Random(0), 0.0, 0, []
    if args.resume:
        data = args.resume.read_bytes()
        if hashlib.sha256(data).hexdigest() != args.resume.with_name("checkpoint.pt.sha256").read_text().split()[0]:
            raise SystemExit(f"{args.resume}: sha256 does not match its sidecar")
        with zipfile.ZipFile(args.resume) as archive:
            state = pickle.loads(archive.read("archive/data.pkl"))  # this trainer's own file: plain data
        w, step, history = state["w"], state["step"], state["history"]
        if not args.omit_rng_restore:
            rng.setstate(state["rng"])
    for _ in range(args.steps):
        step += 1
        history.append({"step": step, "rows": [step % 3], "lr": 0.1, "loss": (w - 1.0) ** 2})
        w -= 0.1 * (2 * (w - 1.0) + rng.gauss(0.0, 0.1))
    make_output(args.output)
    state = {"w": w, "step": step, "history": history, "rng": rng.getstate()}
    write_checkpoint(args.output, checkpoint_bytes(state))
    peek = random.Random()
    peek.setstate(rng.getstate())
    summary = {"protocol": PROTOCOL, "step": step, "history": history, "state": {"w": w}, "eval": {"w": w}}
    write_summary(args.output, summary | {"next": {"lr": 0.1, "rng": {"python": peek.random()}}})


if __name__ == "__main__":
    run(parser().parse_args())
