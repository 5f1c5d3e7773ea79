"""Fault: a resume rewrites the checkpoint it resumes from (appends a byte to it).

Everything it writes is valid, and its summaries match, but the interrupted checkpoint no longer
matches the fingerprint the verifier accepted: exit 2, naming the file.
"""

from _protocol_files import checkpoint_bytes, make_output, parse_args, summary, write_checkpoint, write_summary

args = parse_args()
make_output(args.output)
total = args.steps
if args.resume is not None:
    total += 2  # the tests interrupt at 2
    with open(args.resume, "ab") as f:
        f.write(b"\0")
write_checkpoint(args.output, checkpoint_bytes({"step": total}))
write_summary(args.output, summary(total))
