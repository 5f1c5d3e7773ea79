"""Fault: the trainer crashes (an uncaught exception, exit status 1) after creating its output directory.

The verifier must stop with exit 2 and one line pointing at the log, without a traceback of its own.
"""

from _protocol_files import make_output, parse_args

args = parse_args()
make_output(args.output)
raise RuntimeError("simulated crash in the middle of training")
