"""Fault: checkpoint.pt.sha256 is well-formed but records a digest that is not the checkpoint's.

Everything else is valid. The verifier must refuse the checkpoint with exit 2, mentioning sha256.
"""

import hashlib

from _protocol_files import checkpoint_bytes, make_output, parse_args, summary, write_checkpoint, write_summary

args = parse_args()
make_output(args.output)
data = checkpoint_bytes({"step": args.steps})
write_checkpoint(args.output, data, digest=hashlib.sha256(data + b"tampered").hexdigest())
write_summary(args.output, summary(args.steps))
