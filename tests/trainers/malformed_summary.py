"""Fault: summary.json is not valid JSON (cut short); checkpoint.pt and its sidecar are fine.

The verifier must refuse the trajectory with exit 2 and a line naming the summary file.
"""

import json

from _protocol_files import checkpoint_bytes, make_output, parse_args, summary, write_checkpoint, write_summary

args = parse_args()
make_output(args.output)
write_checkpoint(args.output, checkpoint_bytes({"step": args.steps}))
text = json.dumps(summary(args.steps), indent=1)
write_summary(args.output, text[: len(text) // 2])  # as if the writer died halfway
